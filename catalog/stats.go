// Store and shard statistics: batched upserts from observers (flush sweeper, StatsRefresh,
// maintenance activities) and the candidate queries the sweeps pick work with.
//
// Ordering rule: an upsert only replaces a row whose updated_at is not newer than its own, so a
// late, stale observation never overwrites a fresher one.
//
// Locking rule: UpsertShardStats locks the affected store_stats rows (in (kind, name) order, so
// concurrent batches cannot deadlock) before touching shard_stats, and recomputes the per-store
// roll-up (pending_generations, oldest_pending_at) under that lock. Two concurrent batches for
// one store therefore serialise, and the roll-up always equals the sum of the shard rows.
package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// StoreStats describes a store's base table. PendingGenerations and OldestPendingAt are the
// roll-up of its shards; they are read-only here (UpsertShardStats maintains them).
type StoreStats struct {
	Kind                  Kind
	Name                  string
	TableVersion          int64
	BaseRows              int64
	Fragments             int
	DeletedRows           int64
	Bytes                 int64
	IndexCoveredFragments int
	// CompactableFragments is how many fragments the compaction planner would rewrite now (0: a
	// compaction would do nothing).
	CompactableFragments int
	// CleanedVersion is the table version the last version cleanup saw (maintained by
	// RecordCleanup; read-only for UpsertStoreStats).
	CleanedVersion int64
	// DroppedBytes is the table's count of bytes its commits stopped referencing;
	// CleanedDroppedBytes that count as of the oldest version the last cleanup kept (maintained
	// by RecordCleanup). GarbageBytes is their difference.
	DroppedBytes        int64
	CleanedDroppedBytes int64
	LastCleanupAt       *time.Time
	LastMergeAt         *time.Time // nil keeps the stored value
	LastCompactAt       *time.Time // nil keeps the stored value
	LastIndexAt         *time.Time // nil keeps the stored value
	MergesTotal         int64
	CompactionsTotal    int64
	PendingGenerations  int
	OldestPendingAt     *time.Time
	UpdatedAt           time.Time // observation time; zero means now
}

// GarbageBytes estimates the bytes of files the store's table no longer references that are
// still on storage.
func (s StoreStats) GarbageBytes() int64 { return max(s.DroppedBytes-s.CleanedDroppedBytes, 0) }

// ShardStats describes one write-ahead shard of a store: what it has sealed but not yet merged.
type ShardStats struct {
	Kind               Kind
	Name               string
	Shard              string
	PendingGenerations int
	PendingRows        int64
	PendingBytes       int64
	OldestPendingAt    *time.Time // seal time of the oldest unmerged generation; nil when none
	UpdatedAt          time.Time  // observation time; zero means now
}

// neverObserved is the updated_at of the stats row a store is created with (SQL).
const neverObserved = `'epoch'::timestamptz`

func observedAt(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// UpsertStoreStats writes a batch of store observations in one statement.
func (c *Catalog) UpsertStoreStats(ctx context.Context, batch []StoreStats) error {
	if len(batch) == 0 {
		return nil
	}
	// Sorting keeps row-lock order stable across concurrent batches.
	batch = slices.Clone(batch)
	slices.SortFunc(batch, func(a, b StoreStats) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	batch = slices.CompactFunc(batch, func(a, b StoreStats) bool { return a.Kind == b.Kind && a.Name == b.Name })
	n := len(batch)
	kinds, names := make([]string, n), make([]string, n)
	versions, rows, deleted, bytes, merges, compactions := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	dropped := make([]int64, n)
	fragments, covered, compactable := make([]int32, n), make([]int32, n), make([]int32, n)
	lastMerge, lastCompact, lastIndex := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	updated := make([]time.Time, n)
	for i, s := range batch {
		kinds[i], names[i] = string(s.Kind), s.Name
		versions[i], rows[i], deleted[i], bytes[i] = s.TableVersion, s.BaseRows, s.DeletedRows, s.Bytes
		merges[i], compactions[i], dropped[i] = s.MergesTotal, s.CompactionsTotal, s.DroppedBytes
		fragments[i], covered[i], compactable[i] = int32(s.Fragments), int32(s.IndexCoveredFragments), int32(s.CompactableFragments)
		lastMerge[i], lastCompact[i], lastIndex[i] = s.LastMergeAt, s.LastCompactAt, s.LastIndexAt
		updated[i] = observedAt(s.UpdatedAt)
	}
	_, err := c.pool.Exec(ctx, `
		INSERT INTO store_stats AS s (kind, name, table_version, base_rows, fragments, deleted_rows, bytes,
			index_covered_fragments, last_merge_at, last_compact_at, last_index_at, merges_total,
			compactions_total, updated_at, compactable_fragments, dropped_bytes)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::int[], $6::bigint[],
			$7::bigint[], $8::int[], $9::timestamptz[], $10::timestamptz[], $11::timestamptz[],
			$12::bigint[], $13::bigint[], $14::timestamptz[], $15::int[], $16::bigint[])
		ON CONFLICT (kind, name) DO UPDATE SET
			table_version = EXCLUDED.table_version,
			base_rows = EXCLUDED.base_rows,
			fragments = EXCLUDED.fragments,
			deleted_rows = EXCLUDED.deleted_rows,
			bytes = EXCLUDED.bytes,
			index_covered_fragments = EXCLUDED.index_covered_fragments,
			compactable_fragments = EXCLUDED.compactable_fragments,
			last_merge_at = COALESCE(EXCLUDED.last_merge_at, s.last_merge_at),
			last_compact_at = COALESCE(EXCLUDED.last_compact_at, s.last_compact_at),
			last_index_at = COALESCE(EXCLUDED.last_index_at, s.last_index_at),
			merges_total = EXCLUDED.merges_total,
			compactions_total = EXCLUDED.compactions_total,
			dropped_bytes = EXCLUDED.dropped_bytes,
			updated_at = EXCLUDED.updated_at,
			swept_at = NULL
		WHERE s.updated_at <= EXCLUDED.updated_at`,
		kinds, names, versions, rows, fragments, deleted, bytes, covered, lastMerge, lastCompact, lastIndex,
		merges, compactions, updated, compactable, dropped)
	if err != nil {
		return errorf("catalog: upsert %d store stats: %w", n, err)
	}
	return nil
}

// UpsertShardStats writes a batch of shard observations and refreshes the per-store roll-up,
// in one transaction.
func (c *Catalog) UpsertShardStats(ctx context.Context, batch []ShardStats) error {
	if len(batch) == 0 {
		return nil
	}
	batch = slices.Clone(batch)
	slices.SortFunc(batch, func(a, b ShardStats) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Shard, b.Shard))
	})
	batch = slices.CompactFunc(batch, func(a, b ShardStats) bool {
		return a.Kind == b.Kind && a.Name == b.Name && a.Shard == b.Shard
	})
	n := len(batch)
	kinds, names, shards := make([]string, n), make([]string, n), make([]string, n)
	gens := make([]int32, n)
	rows, bytes := make([]int64, n), make([]int64, n)
	oldest := make([]*time.Time, n)
	updated := make([]time.Time, n)
	for i, s := range batch {
		kinds[i], names[i], shards[i] = string(s.Kind), s.Name, s.Shard
		gens[i], rows[i], bytes[i] = int32(s.PendingGenerations), s.PendingRows, s.PendingBytes
		oldest[i], updated[i] = s.OldestPendingAt, observedAt(s.UpdatedAt)
	}
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// 1. Make sure each store has a roll-up row, then lock those rows in key order. (A row
		// never observed counts as observed from now on, as a row this inserts does.)
		if _, err := tx.Exec(ctx, `
			INSERT INTO store_stats AS s (kind, name)
			SELECT DISTINCT k, n FROM unnest($1::text[], $2::text[]) AS t(k, n) ORDER BY k, n
			ON CONFLICT (kind, name) DO UPDATE SET updated_at = now() WHERE s.updated_at = `+neverObserved,
			kinds, names); err != nil {
			return errorf("catalog: upsert shard stats: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			SELECT 1 FROM store_stats
			WHERE (kind, name) IN (SELECT k, n FROM unnest($1::text[], $2::text[]) AS t(k, n))
			ORDER BY kind, name FOR UPDATE`, kinds, names); err != nil {
			return errorf("catalog: upsert shard stats: %w", err)
		}
		// 2. The shard rows themselves.
		if _, err := tx.Exec(ctx, `
			INSERT INTO shard_stats AS s (kind, name, shard, pending_generations, pending_rows, pending_bytes,
				oldest_pending_at, updated_at)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::bigint[],
				$7::timestamptz[], $8::timestamptz[])
			ON CONFLICT (kind, name, shard) DO UPDATE SET
				pending_generations = EXCLUDED.pending_generations,
				pending_rows = EXCLUDED.pending_rows,
				pending_bytes = EXCLUDED.pending_bytes,
				oldest_pending_at = EXCLUDED.oldest_pending_at,
				updated_at = EXCLUDED.updated_at
			WHERE s.updated_at <= EXCLUDED.updated_at`,
			kinds, names, shards, gens, rows, bytes, oldest, updated); err != nil {
			return errorf("catalog: upsert shard stats: %w", err)
		}
		// 3. The roll-up, recomputed from every shard of each affected store.
		if _, err := tx.Exec(ctx, rollupSQL, kinds, names); err != nil {
			return errorf("catalog: upsert shard stats: roll-up: %w", err)
		}
		return nil
	})
}

const rollupSQL = `
	UPDATE store_stats s SET
		pending_generations = r.total,
		oldest_pending_at = r.oldest
	FROM (
		SELECT kind, name,
			COALESCE(sum(pending_generations), 0)::int AS total,
			min(oldest_pending_at) FILTER (WHERE pending_generations > 0) AS oldest
		FROM shard_stats
		WHERE (kind, name) IN (SELECT k, n FROM unnest($1::text[], $2::text[]) AS t(k, n))
		GROUP BY kind, name
	) r
	WHERE s.kind = r.kind AND s.name = r.name
	  AND (s.pending_generations, s.oldest_pending_at) IS DISTINCT FROM (r.total, r.oldest)`

// DeleteQuietShardStats removes shard rows with nothing pending that have not been observed
// since quietSince (shards whose writer went away), and returns how many it removed.
func (c *Catalog) DeleteQuietShardStats(ctx context.Context, quietSince time.Time, limit int) (int64, error) {
	if limit <= 0 {
		limit = 1000
	}
	tag, err := c.pool.Exec(ctx, `
		DELETE FROM shard_stats WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM shard_stats
			WHERE pending_generations = 0 AND updated_at < $1
			LIMIT $2))`, quietSince, limit)
	if err != nil {
		return 0, errorf("catalog: delete quiet shard stats: %w", err)
	}
	return tag.RowsAffected(), nil
}

const storeStatsColumns = `s.kind, s.name, s.table_version, s.base_rows, s.fragments, s.deleted_rows, s.bytes,
	s.index_covered_fragments, s.last_merge_at, s.last_compact_at, s.last_index_at, s.merges_total,
	s.compactions_total, s.pending_generations, s.oldest_pending_at, s.updated_at, s.compactable_fragments,
	s.cleaned_version, s.last_cleanup_at, s.dropped_bytes, s.cleaned_dropped_bytes`

func scanStoreStats(row pgx.Row) (StoreStats, error) {
	var s StoreStats
	var kind string
	var fragments, covered, pending, compactable int32
	err := row.Scan(&kind, &s.Name, &s.TableVersion, &s.BaseRows, &fragments, &s.DeletedRows, &s.Bytes,
		&covered, &s.LastMergeAt, &s.LastCompactAt, &s.LastIndexAt, &s.MergesTotal, &s.CompactionsTotal,
		&pending, &s.OldestPendingAt, &s.UpdatedAt, &compactable, &s.CleanedVersion, &s.LastCleanupAt,
		&s.DroppedBytes, &s.CleanedDroppedBytes)
	s.Kind, s.Fragments, s.IndexCoveredFragments, s.PendingGenerations = Kind(kind), int(fragments), int(covered), int(pending)
	s.CompactableFragments = int(compactable)
	return s, err
}

// GetStoreStats returns the stats row of kind/name, or ErrNotFound when none was written.
func (c *Catalog) GetStoreStats(ctx context.Context, kind Kind, name string) (StoreStats, error) {
	s, err := scanStoreStats(c.pool.QueryRow(ctx,
		`SELECT `+storeStatsColumns+` FROM store_stats s WHERE s.kind = $1 AND s.name = $2 AND s.updated_at > `+neverObserved,
		string(kind), name))
	if errors.Is(err, pgx.ErrNoRows) {
		return StoreStats{}, fmt.Errorf("%w: no stats for store %s/%s", ErrNotFound, kind, name)
	}
	if err != nil {
		return StoreStats{}, errorf("catalog: get stats of %s/%s: %w", kind, name, err)
	}
	return s, nil
}

// RecordCleanup notes that a version cleanup of kind/name ran on table version v and kept the
// versions from one whose dropped-bytes count is retainedDropped (neither ever moves back). A
// store with no stats row yet gets one.
func (c *Catalog) RecordCleanup(ctx context.Context, kind Kind, name string, v, retainedDropped int64) error {
	_, err := c.pool.Exec(ctx, `
		INSERT INTO store_stats AS s (kind, name, table_version, cleaned_version, cleaned_dropped_bytes, last_cleanup_at)
		VALUES ($1, $2, $3, $3, $4, now())
		ON CONFLICT (kind, name) DO UPDATE SET
			cleaned_version = GREATEST(s.cleaned_version, EXCLUDED.cleaned_version),
			cleaned_dropped_bytes = GREATEST(s.cleaned_dropped_bytes, EXCLUDED.cleaned_dropped_bytes),
			last_cleanup_at = now(),
			swept_at = NULL`, string(kind), name, v, retainedDropped)
	if err != nil {
		return errorf("catalog: record cleanup of %s/%s: %w", kind, name, err)
	}
	return nil
}
