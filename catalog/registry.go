// The store registry: create (idempotent), get, list (keyset + prefix), soft delete, restore.
//
// A store is identified by (kind, name) while live. Soft delete keeps the row (deleted_at set) so
// its data can be purged later by registry cleanup or the store restored; the name is free for a
// new store at once, because only live rows are unique (index stores_live_name). Each
// incarnation has its own id, and callers give each its own URI, so a re-created store never
// sees the data of a deleted one.
package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Store is one registry row.
type Store struct {
	ID        uuid.UUID
	Kind      Kind
	Name      string
	URI       string
	Schema    json.RawMessage // nil when the kind has a fixed schema
	Options   json.RawMessage // a JSON object, "{}" when none
	CreatedAt time.Time
	DeletedAt *time.Time // nil while live
}

// StoreDefinition is what a caller asks to create. Two definitions are the same when kind, name,
// schema and options are equal as JSON values (key order and spacing do not matter); the URI is
// where the data of a new store goes and plays no part in the comparison.
type StoreDefinition struct {
	Kind    Kind
	Name    string
	URI     string
	Schema  json.RawMessage
	Options json.RawMessage
}

const storeColumns = `id, kind, name, uri, schema, options, created_at, deleted_at`

func scanStore(row pgx.Row) (Store, error) {
	var s Store
	var kind string
	var schema, options []byte
	err := row.Scan(&s.ID, &kind, &s.Name, &s.URI, &schema, &options, &s.CreatedAt, &s.DeletedAt)
	s.Kind = Kind(kind)
	if schema != nil {
		s.Schema = json.RawMessage(schema)
	}
	s.Options = json.RawMessage(options)
	return s, err
}

func normalizeJSON(what string, raw json.RawMessage, dflt string) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		if dflt == "" {
			return nil, nil
		}
		return []byte(dflt), nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: %s is not valid JSON", ErrInvalid, what)
	}
	var v any
	if !utf8.Valid(raw) || json.Unmarshal(raw, &v) != nil || holdsNUL(v) {
		return nil, fmt.Errorf("%w: %s holds invalid UTF-8 or a NUL character, which the catalog cannot store", ErrInvalid, what)
	}
	return raw, nil
}

// holdsNUL reports whether a decoded JSON value has a NUL character in any key or string.
func holdsNUL(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.ContainsRune(x, 0)
	case []any:
		return slices.ContainsFunc(x, holdsNUL)
	case map[string]any:
		for k, e := range x {
			if strings.ContainsRune(k, 0) || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

// CreateStore registers a store. It returns the registered store and whether this call created
// it: calling it again with the same definition returns the existing store (created=false, even
// when a concurrent call won the race); a different definition under a live name is ErrConflict.
func (c *Catalog) CreateStore(ctx context.Context, def StoreDefinition) (Store, bool, error) {
	if _, err := ParseKind(string(def.Kind)); err != nil {
		return Store{}, false, err
	}
	if err := ValidateName(def.Name); err != nil {
		return Store{}, false, err
	}
	if err := ValidateURI(def.URI); err != nil {
		return Store{}, false, err
	}
	schema, err := normalizeJSON("schema", def.Schema, "")
	if err != nil {
		return Store{}, false, err
	}
	options, err := normalizeJSON("options", def.Options, "{}")
	if err != nil {
		return Store{}, false, err
	}
	if options[0] != '{' {
		return Store{}, false, fmt.Errorf("%w: options must be a JSON object", ErrInvalid)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Store{}, false, err
	}

	// ON CONFLICT DO NOTHING waits for a concurrent insert of the same name to finish, so when it
	// returns no row the winner is committed and the SELECT below sees it.
	// The store's stats row (never observed: updated_at at the epoch) is written with it, so the
	// stale-stats sweep finds the store through store_stats' index (migration 012).
	s, err := scanStore(c.pool.QueryRow(ctx, `
		WITH created AS (
			INSERT INTO stores (id, kind, name, uri, schema, options)
			VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)
			ON CONFLICT (kind, name) WHERE deleted_at IS NULL DO NOTHING
			RETURNING `+storeColumns+`
		), stats AS (
			INSERT INTO store_stats (kind, name, updated_at)
			SELECT kind, name, `+neverObserved+` FROM created
			ON CONFLICT (kind, name) DO NOTHING
		)
		SELECT `+storeColumns+` FROM created`,
		id, string(def.Kind), def.Name, def.URI, schema, options))
	if err == nil {
		return s, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Store{}, false, errorf("catalog: create store %s/%s: %w", def.Kind, def.Name, err)
	}

	var same bool
	var existing Store
	var kind string
	var eschema, eoptions []byte
	err = c.pool.QueryRow(ctx, `
		SELECT `+storeColumns+`, (schema IS NOT DISTINCT FROM $3::jsonb AND options = $4::jsonb)
		FROM stores WHERE kind = $1 AND name = $2 AND deleted_at IS NULL`,
		string(def.Kind), def.Name, schema, options).
		Scan(&existing.ID, &kind, &existing.Name, &existing.URI, &eschema, &eoptions,
			&existing.CreatedAt, &existing.DeletedAt, &same)
	if errors.Is(err, pgx.ErrNoRows) {
		// The live row was soft-deleted between our insert and this read.
		return Store{}, false, fmt.Errorf("%w: store %s/%s was deleted while being created; retry", ErrConflict, def.Kind, def.Name)
	}
	if err != nil {
		return Store{}, false, errorf("catalog: create store %s/%s: %w", def.Kind, def.Name, err)
	}
	existing.Kind = Kind(kind)
	if eschema != nil {
		existing.Schema = eschema
	}
	existing.Options = eoptions
	if !same {
		return existing, false, fmt.Errorf("%w: store %s/%s already exists with a different definition", ErrConflict, def.Kind, def.Name)
	}
	return existing, false, nil
}

// GetStore returns the live store kind/name, or ErrNotFound.
func (c *Catalog) GetStore(ctx context.Context, kind Kind, name string) (Store, error) {
	s, err := scanStore(c.pool.QueryRow(ctx,
		`SELECT `+storeColumns+` FROM stores WHERE kind = $1 AND name = $2 AND deleted_at IS NULL`,
		string(kind), name))
	if errors.Is(err, pgx.ErrNoRows) {
		return Store{}, fmt.Errorf("%w: store %s/%s", ErrNotFound, kind, name)
	}
	if err != nil {
		return Store{}, errorf("catalog: get store %s/%s: %w", kind, name, err)
	}
	return s, nil
}

// ListOptions selects a page of live stores of one kind, in name order.
type ListOptions struct {
	Prefix string // only names starting with Prefix
	After  string // keyset cursor: only names strictly after this one (the previous page's Next)
	Limit  int    // page size; 0 means 100, capped at 10,000
}

// StorePage is one page of ListStores. Next is empty on the last page.
type StorePage struct {
	Stores []Store
	Next   string
}

// prefixUpperBound is the smallest string greater than every valid name starting with prefix:
// name bytes are all below 0x7f, so prefix+"\x7f" bounds them (and the column is COLLATE "C").
func prefixUpperBound(prefix string) string { return prefix + "\x7f" }

// ListStores returns live stores of kind in name order, a page at a time.
func (c *Catalog) ListStores(ctx context.Context, kind Kind, opts ListOptions) (StorePage, error) {
	if err := validatePrefix(opts.Prefix); err != nil {
		return StorePage{}, err
	}
	if !utf8.ValidString(opts.After) || strings.ContainsRune(opts.After, 0) {
		return StorePage{}, fmt.Errorf("%w: the cursor holds invalid UTF-8 or a NUL character", ErrInvalid)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 10_000)
	lower := opts.Prefix
	strict := false
	if opts.After >= lower {
		lower, strict = opts.After, true
	}
	rows, err := c.pool.Query(ctx, `
		SELECT `+storeColumns+` FROM stores
		WHERE kind = $1 AND deleted_at IS NULL
		  AND (name > $2 OR (NOT $3 AND name = $2)) AND name < $4
		ORDER BY name LIMIT $5`,
		string(kind), lower, strict, prefixUpperBound(opts.Prefix), limit+1)
	if err != nil {
		return StorePage{}, errorf("catalog: list %s stores: %w", kind, err)
	}
	stores, err := pgx.CollectRows(rows, scanStoreRow)
	if err != nil {
		return StorePage{}, errorf("catalog: list %s stores: %w", kind, err)
	}
	page := StorePage{Stores: stores}
	if len(stores) > limit {
		page.Stores = stores[:limit]
		page.Next = stores[limit-1].Name
	}
	return page, nil
}

// SoftDeleteStore marks the live store kind/name deleted and returns it, dropping its store and
// shard stats and its recorded maintenance failures in the same transaction. Its data stays until registry cleanup purges it.
func (c *Catalog) SoftDeleteStore(ctx context.Context, kind Kind, name string) (Store, error) {
	var s Store
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var err error
		s, err = scanStore(tx.QueryRow(ctx, `
			UPDATE stores SET deleted_at = now()
			WHERE kind = $1 AND name = $2 AND deleted_at IS NULL
			RETURNING `+storeColumns, string(kind), name))
		if err != nil {
			return err
		}
		// Stats describe the live incarnation: a store created again under this name starts
		// with none (no inherited pending generations, fragments or plans).
		if _, err := tx.Exec(ctx, `DELETE FROM shard_stats WHERE kind = $1 AND name = $2`, string(kind), name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM maintenance_failures WHERE kind = $1 AND name = $2`, string(kind), name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM maintenance_runs WHERE kind = $1 AND name = $2`, string(kind), name); err != nil {
			return err
		}
		// Its consumers and its cuts in read tokens go with it (a store created again under the
		// name starts a new feed).
		if _, err := tx.Exec(ctx, `DELETE FROM feed_consumers WHERE kind = $1 AND name = $2`, string(kind), name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM read_snapshot_stores WHERE kind = $1 AND name = $2`, string(kind), name); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM store_stats WHERE kind = $1 AND name = $2`, string(kind), name)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Store{}, fmt.Errorf("%w: store %s/%s", ErrNotFound, kind, name)
	}
	if err != nil {
		return Store{}, errorf("catalog: delete store %s/%s: %w", kind, name, err)
	}
	return s, nil
}

// ListDeletedStores returns up to limit stores (of every kind) deleted before olderThan, oldest
// deletion first, stores whose last purge failed after all others (least recently failed first):
// the work list of registry cleanup.
func (c *Catalog) ListDeletedStores(ctx context.Context, olderThan time.Time, limit int) ([]Store, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := c.pool.Query(ctx, `
		SELECT `+storeColumns+` FROM stores
		WHERE deleted_at IS NOT NULL AND deleted_at < $1
		ORDER BY purge_failed_at NULLS FIRST, deleted_at, kind, name LIMIT $2`, olderThan, limit)
	if err != nil {
		return nil, errorf("catalog: list deleted stores: %w", err)
	}
	stores, err := pgx.CollectRows(rows, scanStoreRow)
	if err != nil {
		return nil, errorf("catalog: list deleted stores: %w", err)
	}
	return stores, nil
}

// PurgeStore removes the registry row of a soft-deleted store once its data is gone. A live
// store is never purged (ErrNotFound).
func (c *Catalog) PurgeStore(ctx context.Context, id uuid.UUID) error {
	tag, err := c.pool.Exec(ctx, `DELETE FROM stores WHERE id = $1 AND deleted_at IS NOT NULL`, id)
	if err != nil {
		return errorf("catalog: purge store %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: no deleted store with id %s", ErrNotFound, id)
	}
	return nil
}

// MarkPurgeFailed records that purging the deleted store id failed just now (see
// ListDeletedStores).
func (c *Catalog) MarkPurgeFailed(ctx context.Context, id uuid.UUID) error {
	if _, err := c.pool.Exec(ctx, `UPDATE stores SET purge_failed_at = now() WHERE id = $1 AND deleted_at IS NOT NULL`, id); err != nil {
		return errorf("catalog: mark purge of %s failed: %w", id, err)
	}
	return nil
}

// RegisteredURIs reports which of uris belong to a registry row, live or soft-deleted.
func (c *Catalog) RegisteredURIs(ctx context.Context, uris []string) (map[string]bool, error) {
	rows, err := c.pool.Query(ctx, `SELECT DISTINCT uri FROM stores WHERE uri = ANY($1)`, uris)
	if err != nil {
		return nil, errorf("catalog: look up URIs: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, errorf("catalog: look up URIs: %w", err)
	}
	out := make(map[string]bool, len(found))
	for _, u := range found {
		out[u] = true
	}
	return out, nil
}

// LiveStoreIDs reports which of ids are still live stores (not soft-deleted, not purged): a
// worker uses it to drop resident stores that were deleted through another worker.
func (c *Catalog) LiveStoreIDs(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]bool, error) {
	rows, err := c.pool.Query(ctx, `SELECT id FROM stores WHERE id = ANY($1) AND deleted_at IS NULL`, ids)
	if err != nil {
		return nil, errorf("catalog: look up live stores: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, errorf("catalog: look up live stores: %w", err)
	}
	out := make(map[uuid.UUID]bool, len(found))
	for _, id := range found {
		out[id] = true
	}
	return out, nil
}
