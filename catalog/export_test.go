// Test-only API: helpers the tests of this package (internal and external) use, kept out of
// the production build.
package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RestoreStore brings back the most recently deleted incarnation of kind/name. ErrNotFound when
// there is none (or it was purged); ErrConflict when a live store already holds the name.
func (c *Catalog) RestoreStore(ctx context.Context, kind Kind, name string) (Store, error) {
	s, err := scanStore(c.pool.QueryRow(ctx, `
		UPDATE stores SET deleted_at = NULL
		WHERE id = (SELECT id FROM stores WHERE kind = $1 AND name = $2 AND deleted_at IS NOT NULL
		            ORDER BY deleted_at DESC LIMIT 1)
		  AND NOT EXISTS (SELECT 1 FROM stores WHERE kind = $1 AND name = $2 AND deleted_at IS NULL)
		RETURNING `+storeColumns, string(kind), name))
	if err == nil {
		return s, nil
	}
	if isUniqueViolation(err) {
		return Store{}, fmt.Errorf("%w: store %s/%s was re-created; cannot restore over it", ErrConflict, kind, name)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Store{}, errorf("catalog: restore store %s/%s: %w", kind, name, err)
	}
	if _, gerr := c.GetStore(ctx, kind, name); gerr == nil {
		return Store{}, fmt.Errorf("%w: store %s/%s is live; nothing to restore", ErrConflict, kind, name)
	}
	return Store{}, fmt.Errorf("%w: no deleted store %s/%s", ErrNotFound, kind, name)
}

// ListShardStats returns every shard row of kind/name, by shard.
func (c *Catalog) ListShardStats(ctx context.Context, kind Kind, name string) ([]ShardStats, error) {
	rows, err := c.pool.Query(ctx, `
		SELECT kind, name, shard, pending_generations, pending_rows, pending_bytes, oldest_pending_at, updated_at
		FROM shard_stats WHERE kind = $1 AND name = $2 ORDER BY shard`, string(kind), name)
	if err != nil {
		return nil, errorf("catalog: list shard stats of %s/%s: %w", kind, name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ShardStats, error) {
		var s ShardStats
		var kind string
		var gens int32
		err := r.Scan(&kind, &s.Name, &s.Shard, &gens, &s.PendingRows, &s.PendingBytes, &s.OldestPendingAt, &s.UpdatedAt)
		s.Kind, s.PendingGenerations = Kind(kind), int(gens)
		return s, err
	})
	if err != nil {
		return nil, errorf("catalog: list shard stats of %s/%s: %w", kind, name, err)
	}
	return out, nil
}

// TenantSQLForTest is Tenancy.sql.
func TenantSQLForTest(t Tenancy, col, sep string) string { return t.sql(col, sep) }
