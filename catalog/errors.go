// Errors returned by the catalog. Callers test them with errors.Is; messages name the store.
package catalog

import "errors"

var (
	// ErrNotFound: no live store (or no deleted store, for Restore) with that kind and name.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request contradicts what is registered (a different definition under the
	// same name, or a restore while a live store holds the name).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request is malformed (bad kind, name, prefix or JSON); nothing was changed.
	ErrInvalid = errors.New("invalid")
	// ErrUnavailable: PostgreSQL could not be reached or the connection broke; nothing is known to
	// have changed and the request may be retried (see IsUnavailable).
	ErrUnavailable = errors.New("catalog unavailable")
)
