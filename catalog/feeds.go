// Change-feed consumers and read tokens (migration 011): named consumers with their committed
// cursors, read tokens with each store's cut, and what both hold of a store (Holds), which the
// store's merges and cleanups keep. Cursors and cuts are opaque here: storage writes and reads
// them.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Consumer is a named change-feed consumer of a store.
type Consumer struct {
	Kind        Kind
	Name        string
	Consumer    string
	Cursor      string
	CreatedAt   time.Time
	CommittedAt time.Time
}

// MaxConsumersPerStore bounds a store's consumers (each one's cursor is read by every merge).
const MaxConsumersPerStore = 256

// CreateConsumer registers consumer on the store at cursor; ErrConflict when it exists.
func (c *Catalog) CreateConsumer(ctx context.Context, kind Kind, name, consumer, cursor string) (Consumer, error) {
	if err := ValidateName(consumer); err != nil {
		return Consumer{}, err
	}
	var out Consumer
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM feed_consumers WHERE kind = $1 AND name = $2`, string(kind), name).Scan(&n); err != nil {
			return err
		}
		if n >= MaxConsumersPerStore {
			return fmt.Errorf("%w: store %s/%s has %d consumers (the most it may have)", ErrConflict, kind, name, n)
		}
		row := tx.QueryRow(ctx, `
			INSERT INTO feed_consumers (kind, name, consumer, cursor) VALUES ($1, $2, $3, $4)
			RETURNING created_at, committed_at`, string(kind), name, consumer, cursor)
		out = Consumer{Kind: kind, Name: name, Consumer: consumer, Cursor: cursor}
		return row.Scan(&out.CreatedAt, &out.CommittedAt)
	})
	switch {
	case isUniqueViolation(err):
		return Consumer{}, fmt.Errorf("%w: consumer %q of %s/%s exists", ErrConflict, consumer, kind, name)
	case errors.Is(err, ErrConflict):
		return Consumer{}, err
	case err != nil:
		return Consumer{}, errorf("catalog: create consumer %q of %s/%s: %w", consumer, kind, name, err)
	}
	return out, nil
}

// GetConsumer returns a consumer (ErrNotFound when there is none).
func (c *Catalog) GetConsumer(ctx context.Context, kind Kind, name, consumer string) (Consumer, error) {
	out := Consumer{Kind: kind, Name: name, Consumer: consumer}
	err := c.pool.QueryRow(ctx, `
		SELECT cursor, created_at, committed_at FROM feed_consumers
		WHERE kind = $1 AND name = $2 AND consumer = $3`, string(kind), name, consumer).Scan(&out.Cursor, &out.CreatedAt, &out.CommittedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Consumer{}, fmt.Errorf("%w: consumer %q of %s/%s", ErrNotFound, consumer, kind, name)
	}
	if err != nil {
		return Consumer{}, errorf("catalog: consumer %q of %s/%s: %w", consumer, kind, name, err)
	}
	return out, nil
}

// ListConsumers returns the store's consumers by name.
func (c *Catalog) ListConsumers(ctx context.Context, kind Kind, name string) ([]Consumer, error) {
	rows, err := c.pool.Query(ctx, `
		SELECT consumer, cursor, created_at, committed_at FROM feed_consumers
		WHERE kind = $1 AND name = $2 ORDER BY consumer`, string(kind), name)
	if err != nil {
		return nil, errorf("catalog: consumers of %s/%s: %w", kind, name, err)
	}
	defer rows.Close()
	var out []Consumer
	for rows.Next() {
		cs := Consumer{Kind: kind, Name: name}
		if err := rows.Scan(&cs.Consumer, &cs.Cursor, &cs.CreatedAt, &cs.CommittedAt); err != nil {
			return nil, errorf("catalog: consumers of %s/%s: %w", kind, name, err)
		}
		out = append(out, cs)
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("catalog: consumers of %s/%s: %w", kind, name, err)
	}
	return out, nil
}

// CommitConsumer records cursor as the consumer's committed position.
func (c *Catalog) CommitConsumer(ctx context.Context, kind Kind, name, consumer, cursor string) (Consumer, error) {
	out := Consumer{Kind: kind, Name: name, Consumer: consumer, Cursor: cursor}
	err := c.pool.QueryRow(ctx, `
		UPDATE feed_consumers SET cursor = $4, committed_at = now()
		WHERE kind = $1 AND name = $2 AND consumer = $3
		RETURNING created_at, committed_at`, string(kind), name, consumer, cursor).Scan(&out.CreatedAt, &out.CommittedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Consumer{}, fmt.Errorf("%w: consumer %q of %s/%s", ErrNotFound, consumer, kind, name)
	}
	if err != nil {
		return Consumer{}, errorf("catalog: commit consumer %q of %s/%s: %w", consumer, kind, name, err)
	}
	return out, nil
}

// DeleteConsumer removes a consumer (ErrNotFound when there is none); what it held is released
// by the store's next merge or cleanup.
func (c *Catalog) DeleteConsumer(ctx context.Context, kind Kind, name, consumer string) error {
	tag, err := c.pool.Exec(ctx, `DELETE FROM feed_consumers WHERE kind = $1 AND name = $2 AND consumer = $3`, string(kind), name, consumer)
	if err != nil {
		return errorf("catalog: delete consumer %q of %s/%s: %w", consumer, kind, name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: consumer %q of %s/%s", ErrNotFound, consumer, kind, name)
	}
	return nil
}

// ReadSnapshot is a read token: a cut of each of its stores at one moment.
type ReadSnapshot struct {
	ID         string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	ReleasedAt *time.Time
	Stores     []SnapshotStore
}

// SnapshotStore is one store's cut in a read token (Cut: JSON written by storage).
type SnapshotStore struct {
	Kind Kind
	Name string
	Cut  json.RawMessage
}

// Live reports whether the token can be read at now.
func (s ReadSnapshot) Live(now time.Time) bool { return s.ReleasedAt == nil && now.Before(s.ExpiresAt) }

// MaxSnapshotStores bounds the stores of one read token.
const MaxSnapshotStores = 10_000

// CreateSnapshot records a read token. Its stores must be live: one deleted meanwhile fails it
// with ErrNotFound (nothing is recorded).
func (c *Catalog) CreateSnapshot(ctx context.Context, s ReadSnapshot) (ReadSnapshot, error) {
	if len(s.Stores) == 0 || len(s.Stores) > MaxSnapshotStores {
		return ReadSnapshot{}, fmt.Errorf("%w: a read token names 1 to %d stores", ErrInvalid, MaxSnapshotStores)
	}
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO read_snapshots (id, expires_at) VALUES ($1, $2) RETURNING created_at`,
			s.ID, s.ExpiresAt).Scan(&s.CreatedAt); err != nil {
			return err
		}
		kinds := make([]string, len(s.Stores))
		names := make([]string, len(s.Stores))
		cuts := make([]string, len(s.Stores))
		for i, st := range s.Stores {
			kinds[i], names[i], cuts[i] = string(st.Kind), st.Name, string(st.Cut)
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO read_snapshot_stores (snapshot_id, kind, name, cut)
			SELECT $1, k, n, c::jsonb FROM unnest($2::text[], $3::text[], $4::text[]) AS u(k, n, c)
			WHERE EXISTS (SELECT 1 FROM stores WHERE kind = u.k AND name = u.n AND deleted_at IS NULL)`,
			s.ID, kinds, names, cuts)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != int64(len(s.Stores)) {
			return fmt.Errorf("%w: a store of the read token was deleted while it was taken", ErrNotFound)
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrNotFound):
		return ReadSnapshot{}, err
	case isUniqueViolation(err):
		return ReadSnapshot{}, fmt.Errorf("%w: read token %s exists (or names a store twice)", ErrConflict, s.ID)
	case err != nil:
		return ReadSnapshot{}, errorf("catalog: create read token: %w", err)
	}
	return s, nil
}

// GetSnapshot returns a read token with its stores (ErrNotFound when there is none).
func (c *Catalog) GetSnapshot(ctx context.Context, id string) (ReadSnapshot, error) {
	s := ReadSnapshot{ID: id}
	err := c.pool.QueryRow(ctx, `SELECT created_at, expires_at, released_at FROM read_snapshots WHERE id = $1`, id).
		Scan(&s.CreatedAt, &s.ExpiresAt, &s.ReleasedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ReadSnapshot{}, fmt.Errorf("%w: read token %s", ErrNotFound, id)
	}
	if err != nil {
		return ReadSnapshot{}, errorf("catalog: read token %s: %w", id, err)
	}
	rows, err := c.pool.Query(ctx, `SELECT kind, name, cut FROM read_snapshot_stores WHERE snapshot_id = $1 ORDER BY kind, name`, id)
	if err != nil {
		return ReadSnapshot{}, errorf("catalog: read token %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var st SnapshotStore
		var kind string
		if err := rows.Scan(&kind, &st.Name, &st.Cut); err != nil {
			return ReadSnapshot{}, errorf("catalog: read token %s: %w", id, err)
		}
		st.Kind = Kind(kind)
		s.Stores = append(s.Stores, st)
	}
	if err := rows.Err(); err != nil {
		return ReadSnapshot{}, errorf("catalog: read token %s: %w", id, err)
	}
	return s, nil
}

// SnapshotCut returns one store's cut in a live read token: ErrNotFound when the token does not
// exist or does not name the store, ErrGone when it expired or was released.
func (c *Catalog) SnapshotCut(ctx context.Context, id string, kind Kind, name string) (json.RawMessage, error) {
	var cut json.RawMessage
	var expires time.Time
	var released *time.Time
	err := c.pool.QueryRow(ctx, `
		SELECT s.expires_at, s.released_at, st.cut FROM read_snapshots s
		JOIN read_snapshot_stores st ON st.snapshot_id = s.id
		WHERE s.id = $1 AND st.kind = $2 AND st.name = $3`, id, string(kind), name).Scan(&expires, &released, &cut)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: read token %s does not name %s/%s", ErrNotFound, id, kind, name)
	}
	if err != nil {
		return nil, errorf("catalog: read token %s: %w", id, err)
	}
	if released != nil || !time.Now().Before(expires) {
		return nil, fmt.Errorf("%w: read token %s expired or was released", ErrGone, id)
	}
	return cut, nil
}

// ErrGone: a read token that expired or was released.
var ErrGone = errors.New("gone")

// ListSnapshots returns live read tokens (without their stores), newest first, at most limit.
func (c *Catalog) ListSnapshots(ctx context.Context, limit int) ([]ReadSnapshot, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	rows, err := c.pool.Query(ctx, `
		SELECT s.id, s.created_at, s.expires_at, (SELECT count(*) FROM read_snapshot_stores WHERE snapshot_id = s.id)
		FROM read_snapshots s WHERE s.released_at IS NULL AND s.expires_at > now()
		ORDER BY s.created_at DESC, s.id LIMIT $1`, limit)
	if err != nil {
		return nil, errorf("catalog: read tokens: %w", err)
	}
	defer rows.Close()
	var out []ReadSnapshot
	for rows.Next() {
		var s ReadSnapshot
		var n int
		if err := rows.Scan(&s.ID, &s.CreatedAt, &s.ExpiresAt, &n); err != nil {
			return nil, errorf("catalog: read tokens: %w", err)
		}
		s.Stores = make([]SnapshotStore, n) // counted, not read
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("catalog: read tokens: %w", err)
	}
	return out, nil
}

// ReleaseSnapshot marks a read token released (its holds end); ErrNotFound when there is none.
// Releasing twice is not an error.
func (c *Catalog) ReleaseSnapshot(ctx context.Context, id string) error {
	tag, err := c.pool.Exec(ctx, `UPDATE read_snapshots SET released_at = coalesce(released_at, now()) WHERE id = $1`, id)
	if err != nil {
		return errorf("catalog: release read token %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: read token %s", ErrNotFound, id)
	}
	return nil
}

// PurgeSnapshots deletes read tokens released or expired before olderThan (with their stores).
func (c *Catalog) PurgeSnapshots(ctx context.Context, olderThan time.Time) (int64, error) {
	tag, err := c.pool.Exec(ctx, `
		DELETE FROM read_snapshots WHERE coalesce(released_at, expires_at) < $1 AND (released_at IS NOT NULL OR expires_at < now())`, olderThan)
	if err != nil {
		return 0, errorf("catalog: purge read tokens: %w", err)
	}
	return tag.RowsAffected(), nil
}

// StoreHolds is what a store's consumers and live read tokens hold: their cursors (committed
// since notBefore; older ones hold nothing, their consumers past the retention bound) and cuts.
type StoreHolds struct {
	Cursors []string
	Cuts    []json.RawMessage
}

// Holds returns what holds the store's merged generations and table versions.
func (c *Catalog) Holds(ctx context.Context, kind Kind, name string, notBefore time.Time) (StoreHolds, error) {
	var h StoreHolds
	rows, err := c.pool.Query(ctx, `
		SELECT cursor, NULL::jsonb FROM feed_consumers WHERE kind = $1 AND name = $2 AND committed_at >= $3
		UNION ALL
		SELECT NULL, st.cut FROM read_snapshot_stores st JOIN read_snapshots s ON s.id = st.snapshot_id
		WHERE st.kind = $1 AND st.name = $2 AND s.released_at IS NULL AND s.expires_at > now()`,
		string(kind), name, notBefore)
	if err != nil {
		return h, errorf("catalog: holds of %s/%s: %w", kind, name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var cursor *string
		var cut json.RawMessage
		if err := rows.Scan(&cursor, &cut); err != nil {
			return h, errorf("catalog: holds of %s/%s: %w", kind, name, err)
		}
		if cursor != nil {
			h.Cursors = append(h.Cursors, *cursor)
		} else {
			h.Cuts = append(h.Cuts, cut)
		}
	}
	if err := rows.Err(); err != nil {
		return h, errorf("catalog: holds of %s/%s: %w", kind, name, err)
	}
	return h, nil
}
