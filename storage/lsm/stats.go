// Stats: what a store reports about itself — its base table's shape and counters, what a
// compaction would take now, and each shard's pending generations — as plain values, so callers
// above storage (the stats refresh, the API) never hold a table manifest or re-run a planner.
package lsm

import (
	"context"
	"errors"
	"time"

	"github.com/strata-store/strata/storage/table"
)

// Stats is a store's state as one observation saw it.
type Stats struct {
	TableVersion          uint64
	Rows, DeletedRows     int64
	Bytes                 int64 // of the live fragments, deletion vectors and index runs
	Fragments             int
	IndexCoveredFragments int
	// CompactableFragments is how many fragments a compaction under the given config would
	// rewrite now (the planner the Compact job runs): 0 means none would be queued.
	CompactableFragments       int
	LastMergeAt, LastCompactAt *time.Time
	LastIndexAt                *time.Time
	Merges, Compactions        uint64
	// DroppedBytes sums, over the table's life, the bytes commits stopped referencing (garbage
	// until version cleanup deletes it).
	DroppedBytes uint64
	// Shards is each shard's pending generations; nil when the store was too busy to list them
	// (ErrOverloaded): the table's figures stand alone then.
	Shards []ShardState
}

// Stats observes the store: shards first, then the table (Snapshot's order); compaction is the
// config the Compact job would run with.
func (s *Store) Stats(ctx context.Context, compaction table.CompactionConfig) (Stats, error) {
	var m *table.Manifest
	var shards []ShardState
	snap, err := s.Snapshot(ctx)
	switch {
	case err == nil:
		m = snap.Table
		for _, sh := range snap.Shards {
			shards = append(shards, sh.State())
		}
	case errors.Is(err, ErrOverloaded):
		if m, err = s.tbl.Latest(ctx); err != nil {
			return Stats{}, err
		}
	default:
		return Stats{}, err
	}
	st := tableStats(m)
	st.CompactableFragments = len(table.PlanCompaction(m, compaction).Sources)
	st.Shards = shards
	return st, nil
}

// TableStats is the base table's part of Stats alone (one manifest read: no shard listing, no
// compaction plan; CompactableFragments and Shards are left zero), for readers that show the
// table's state.
func (s *Store) TableStats(ctx context.Context) (Stats, error) {
	m, err := s.tbl.Latest(ctx)
	if err != nil {
		return Stats{}, err
	}
	return tableStats(m), nil
}

// tableStats is what manifest m says of the table.
func tableStats(m *table.Manifest) Stats {
	return Stats{TableVersion: m.Version, Rows: m.Rows(), DeletedRows: m.DeletedRows(), Bytes: m.Bytes(),
		Fragments: len(m.Fragments), IndexCoveredFragments: m.CoveredFragments(),
		LastMergeAt: m.LastMergeAt, LastCompactAt: m.LastCompactAt, LastIndexAt: m.LastIndexAt,
		Merges: m.Counters.Merges, Compactions: m.Counters.Compactions, DroppedBytes: m.Counters.DroppedBytes}
}

// LatestTableVersion is the base table's latest version.
func (s *Store) LatestTableVersion(ctx context.Context) (uint64, error) {
	m, err := s.tbl.Latest(ctx)
	if err != nil {
		return 0, err
	}
	return m.Version, nil
}
