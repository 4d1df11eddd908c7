// The maintenance jobs of a store, with their ordering rules stated once, here, for every caller
// (the maintenance activities, the manual compaction route, tools):
//
//   - index before merge: a merge upserts by key, and without a key index covering every
//     fragment the table would have to scan key columns (O(table) per merge); Merge builds the
//     index first when it does not cover the table;
//   - re-cover after compaction: a compaction of an indexed table extends the key index over the
//     fragments it wrote, so the next merge finds it covering again;
//   - version cleanup deletes only what no version within the TTL references (table.Cleanup);
//   - a merge repairs the store's dangling shard heads before its passes (repairHeads).
package lsm

import (
	"context"
	"log/slog"

	"github.com/strata-store/strata/storage/table"
)

// MergeSummary reports Merge.
type MergeSummary struct {
	Generations int   // generations folded into the table
	Rows        int64 // rows read from them
	Passes      int   // merge passes run (one per shard with pending generations, at least)
}

// Merge folds every shard's pending generations into the table, in passes of at most
// opts.MaxGenerations generations and opts.MaxBytes of merge memory, running at most maxPasses
// passes in all (0: until every shard is drained), calling opts.BetweenPasses before every pass
// but the first. It builds the key index first when the index does not cover the table (index
// before merge).
func (s *Store) Merge(ctx context.Context, opts MergeOptions, maxPasses int) (MergeSummary, error) {
	var sum MergeSummary
	if err := s.ensureKeyIndex(ctx, func() { opts.OnProgress.report(Progress{Phase: PhaseIndexing}) }); err != nil {
		return sum, err
	}
	shards, err := s.ListShards(ctx)
	if err != nil {
		return sum, err
	}
	s.repairHeads(ctx)
	between := func() error { return nil }
	if opts.BetweenPasses != nil {
		between = func() error { return opts.BetweenPasses(ctx) }
	}
	for _, sh := range shards {
		for maxPasses == 0 || sum.Passes < maxPasses {
			if sum.Passes > 0 {
				if err := between(); err != nil {
					return sum, err
				}
			}
			r, err := s.MergeShard(ctx, sh, opts)
			if err != nil {
				return sum, err
			}
			sum.Passes++
			sum.Generations += r.Generations
			sum.Rows += r.Rows
			if r.Generations == 0 || r.Remaining == 0 {
				break
			}
		}
	}
	return sum, nil
}

// repairHeads repairs the store's dangling shard heads (storage/shard/heads.go: a committer that
// died between a head and its manifest leaves every read of the store one extra read and listing
// until the shard's next commit, which a shard whose writer never returns would not get). Best
// effort: failures are logged, and the next merge tries again.
func (s *Store) repairHeads(ctx context.Context) {
	heads, err := s.shards.Heads(ctx)
	if err != nil {
		slog.Warn("shard heads: listing failed; dangling heads are left for the next merge", "store", s.opts.Name, "err", err)
		return
	}
	for sh, head := range heads {
		repaired, err := s.shards.RepairHead(ctx, sh, head)
		switch {
		case err != nil:
			slog.Warn("shard heads: repair failed; left for the next merge", "store", s.opts.Name, "shard", sh, "head", head, "err", err)
		case repaired:
			slog.Info("shard heads: repaired a dangling head", "store", s.opts.Name, "shard", sh, "head", head)
		}
	}
}

// ensureKeyIndex builds the key index when it does not cover every fragment; onBuild is called
// before building.
func (s *Store) ensureKeyIndex(ctx context.Context, onBuild func()) error {
	m, err := s.tbl.Latest(ctx)
	if err != nil {
		return err
	}
	if m.KeyIndex != nil && m.IndexCoversAll() {
		return nil
	}
	onBuild()
	_, err = s.tbl.BuildKeyIndex(ctx)
	return err
}

// BuildKeyIndex makes the key index cover every fragment.
func (s *Store) BuildKeyIndex(ctx context.Context) (*table.Manifest, error) {
	return s.tbl.BuildKeyIndex(ctx)
}

// CompactOptions configure Compact.
type CompactOptions struct {
	Compaction table.CompactionConfig
	// OnProgress, when set, is told what the compaction is doing: waiting for merge memory,
	// compacting (with the bytes it holds), extending the key index, done (nothing held).
	OnProgress ProgressFunc
}

// Compact compacts the table, then extends the key index over the fragments it wrote when the
// table had an index (re-cover after compaction). A compaction holds its footprint
// (Table.CompactionFootprint) from the process's merge memory budget while it runs, so merges
// and compactions together stay within it.
func (s *Store) Compact(ctx context.Context, opts CompactOptions) (table.CompactionResult, error) {
	m, err := s.tbl.Latest(ctx)
	if err != nil {
		return table.CompactionResult{}, err
	}
	plan := table.PlanCompaction(m, opts.Compaction)
	if len(plan.Sources) == 0 {
		return table.CompactionResult{Manifest: m}, nil
	}
	progress := opts.OnProgress
	defer progress.report(Progress{Phase: PhaseDone})
	footprint := s.tbl.CompactionFootprint(m, plan)
	progress.report(Progress{Phase: PhaseWaitingForBudget})
	res, err := s.opts.Budget.Reserve(ctx, footprint)
	if err != nil {
		return table.CompactionResult{}, err
	}
	progress.report(Progress{Phase: PhaseCompacting, ReservedBytes: res.Bytes()})
	r, err := s.tbl.ExecuteCompaction(ctx, plan)
	res.Release()
	if err != nil {
		return r, err
	}
	if r.FragmentsAdded > 0 && r.Manifest != nil && r.Manifest.KeyIndex != nil && !r.Manifest.IndexCoversAll() {
		progress.report(Progress{Phase: PhaseIndexing})
		m, err := s.tbl.BuildKeyIndex(ctx)
		if err != nil {
			return r, err
		}
		r.Manifest = m
	}
	return r, nil
}

// CleanupVersions deletes expired table versions and the files only they referenced.
func (s *Store) CleanupVersions(ctx context.Context, opts table.CleanupOptions) (table.CleanupResult, error) {
	return s.tbl.CleanupVersions(ctx, opts)
}

// TableManifest is the newest version of the base table's manifest (tests and tools; callers
// above storage read Stats).
func (s *Store) TableManifest(ctx context.Context) (*table.Manifest, error) { return s.tbl.Latest(ctx) }

// TableVersion is version v of the base table's manifest (table.ErrNotFound when it is gone).
func (s *Store) TableVersion(ctx context.Context, v uint64) (*table.Manifest, error) {
	return s.tbl.Version(ctx, v)
}

// CheckTable verifies the table's invariants at manifest m (tests and tools).
func (s *Store) CheckTable(ctx context.Context, m *table.Manifest) error { return s.tbl.Check(ctx, m) }
