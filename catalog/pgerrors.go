// Classification of PostgreSQL errors: by SQLSTATE, and whether the database is unreachable.
package catalog

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// IsUnavailable reports whether err (from any Catalog method) means PostgreSQL could not do the
// work right now rather than that the request was wrong: no connection could be made, the
// connection broke or timed out, the server is shutting down or starting, it has no connection
// slot left, or the catalog was closed. Such a request may succeed if retried later.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// errorf is fmt.Errorf for the catalog's errors: when the error it wraps came from PostgreSQL
// being unreachable (see connectionFailed), the result also matches ErrUnavailable. Only errors
// of catalog operations pass through it, so a network error or early EOF here is PostgreSQL's.
func errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if connectionFailed(err) {
		return unavailableError{err}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		// Class 22, data exception: a value PostgreSQL cannot take (NUL, invalid UTF-8, out of
		// range). The request was wrong, and nothing was changed.
		return fmt.Errorf("%w: a value cannot be stored in the catalog (SQLSTATE %s)", ErrInvalid, pgErr.Code)
	}
	return err
}

func connectionFailed(err error) bool {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || errors.Is(err, puddle.ErrClosedPool) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: admin/crash shutdown, cannot connect now;
		// 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" ||
			pgErr.Code == "57P03" || pgErr.Code == "53300"
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.Timeout(err)
}

// unavailableError is a catalog error that also matches ErrUnavailable; its message is unchanged.
type unavailableError struct{ err error }

func (e unavailableError) Error() string        { return e.err.Error() }
func (e unavailableError) Unwrap() error        { return e.err }
func (e unavailableError) Is(target error) bool { return target == ErrUnavailable }
