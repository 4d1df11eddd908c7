// Store status for operators (`strata status`): every live store of the registry with its stats
// row, when one has been written, in one keyset-paginated query.
package catalog

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// StoreStatus is a live store and its latest stats (nil before any were written).
type StoreStatus struct {
	Kind  Kind
	Name  string
	Stats *StoreStats
	// Shards is how many write shards (one per worker that appended) reported stats.
	Shards int
}

// ListStoreStatus returns live stores of kind ("" = every kind) whose names start with
// opts.Prefix, ordered by kind then name; opts.After is a "kind/name" cursor.
func (c *Catalog) ListStoreStatus(ctx context.Context, kind Kind, opts ListOptions) ([]StoreStatus, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 10_000)
	afterKind, afterName, _ := strings.Cut(opts.After, "/")
	rows, err := c.pool.Query(ctx, `
		SELECT r.kind, r.name, COALESCE(s.updated_at > `+neverObserved+`, false),
		       COALESCE(s.table_version, 0), COALESCE(s.base_rows, 0), COALESCE(s.fragments, 0),
		       COALESCE(s.deleted_rows, 0), COALESCE(s.bytes, 0), COALESCE(s.index_covered_fragments, 0),
		       s.last_merge_at, s.last_compact_at, s.last_index_at, COALESCE(s.merges_total, 0),
		       COALESCE(s.compactions_total, 0), COALESCE(s.pending_generations, 0), s.oldest_pending_at,
		       COALESCE(s.updated_at, r.created_at), COALESCE(s.dropped_bytes, 0), COALESCE(s.cleaned_dropped_bytes, 0),
		       s.last_cleanup_at,
		       (SELECT count(*) FROM shard_stats h WHERE h.kind = r.kind AND h.name = r.name)
		FROM stores r LEFT JOIN store_stats s ON s.kind = r.kind AND s.name = r.name
		WHERE r.deleted_at IS NULL AND ($1 = '' OR r.kind = $1) AND starts_with(r.name, $2)
		  AND (r.kind, r.name) > ($3, $4 COLLATE "C")
		ORDER BY r.kind, r.name LIMIT $5`, string(kind), opts.Prefix, afterKind, afterName, limit)
	if err != nil {
		return nil, errorf("catalog: list store status: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StoreStatus, error) {
		var st StoreStatus
		var s StoreStats
		var kind string
		var has bool
		var fragments, covered, pending int32
		err := r.Scan(&kind, &st.Name, &has, &s.TableVersion, &s.BaseRows, &fragments, &s.DeletedRows, &s.Bytes,
			&covered, &s.LastMergeAt, &s.LastCompactAt, &s.LastIndexAt, &s.MergesTotal, &s.CompactionsTotal,
			&pending, &s.OldestPendingAt, &s.UpdatedAt, &s.DroppedBytes, &s.CleanedDroppedBytes, &s.LastCleanupAt, &st.Shards)
		st.Kind = Kind(kind)
		if has {
			s.Kind, s.Name = st.Kind, st.Name
			s.Fragments, s.IndexCoveredFragments, s.PendingGenerations = int(fragments), int(covered), int(pending)
			st.Stats = &s
		}
		return st, err
	})
	if err != nil {
		return nil, errorf("catalog: list store status: %w", err)
	}
	return out, nil
}
