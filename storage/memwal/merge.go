// WAL merge: fold one shard's oldest sealed generations into the base table.
//
// Prepare takes the oldest pending generations up to MaxGenerations and MaxBytes of merge memory
// (a generation is never split; an oversized first one is taken whole, alone), reserves exactly
// that batch's footprint from the process budget BEFORE reading anything, and reads them.
// Commit is one table upsert that also advances the shard's watermark to the last merged
// generation, so after a crash anywhere either nothing happened or the merge is complete. Only
// then are the merged generations dropped from the shard manifest (a relative edit any process
// may make) and their files deleted, detached and best effort; generations already at or below
// the watermark (a merge that crashed before dropping them) are dropped by the next merge.
//
// Two merges of one shard may race: the table commit re-checks the watermark, so the loser
// commits nothing and reports 0. The shard's owner need not take part, and appends never wait.
package memwal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// MergeOptions bound one merge pass.
type MergeOptions struct {
	MaxGenerations int   // default 8; negative = no limit
	MaxBytes       int64 // merge memory cap (file bytes x mergeMemoryFactor), default 1 GiB; negative = no limit
	// OnPhase, when set, is told what the merge is doing (for activity heartbeats).
	OnPhase func(MergeProgress)
}

// MergeProgress is a merge's state, as reported to OnPhase.
type MergeProgress struct {
	Phase            string // "planning", "waiting_for_budget", "reading", "committing", "dropping", "done"
	Shard            string
	ReservedBytes    int64
	GenerationsRead  int
	RowsMerged       int64
	WaitingForBudget bool
}

// MergeResult reports a merge pass.
type MergeResult struct {
	Generations int   // generations folded into the table by this pass (0 when none, or a racing merge won)
	Rows        int64 // rows read from them
	Remaining   int   // pending generations left in the shard
	Version     uint64
}

var errAlreadyMerged = errors.New("generations already merged by another merge")

// MergeShard runs one bounded merge pass over shard.
func (s *Store) MergeShard(ctx context.Context, shard string, opts MergeOptions) (MergeResult, error) {
	start := time.Now()
	if opts.MaxGenerations == 0 {
		opts.MaxGenerations = 8
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 1 << 30
	}
	progress := MergeProgress{Phase: "planning", Shard: shard}
	report := func() {
		if opts.OnPhase != nil {
			opts.OnPhase(progress)
		}
	}
	report()

	sm, _, err := latestShardManifest(ctx, s.objects, shard)
	if err != nil || sm == nil {
		return MergeResult{}, err
	}
	base, err := s.tbl.Latest(ctx)
	if err != nil {
		return MergeResult{}, err
	}
	wm := base.WALWatermarks[shard]
	var pending []Generation
	for _, g := range sm.Generations {
		if g.Gen > wm {
			pending = append(pending, g)
		}
	}
	batch := selectGenerations(pending, opts.MaxGenerations, opts.MaxBytes)
	if len(batch) == 0 {
		if len(pending) < len(sm.Generations) {
			s.dropMerged(ctx, shard, wm)
		}
		return MergeResult{Version: base.Version}, nil
	}

	// Reserve the batch's footprint (known from the shard manifest) before reading anything, in
	// one acquire: a small merge holds little, so concurrency is bounded by bytes, not by the cap.
	progress.Phase, progress.WaitingForBudget = "waiting_for_budget", true
	report()
	res, err := s.opts.Budget.Reserve(ctx, totalFootprint(batch))
	if err != nil {
		return MergeResult{}, err
	}
	defer res.Release()
	progress.Phase, progress.WaitingForBudget, progress.ReservedBytes = "reading", false, res.Bytes()
	report()

	rec, err := s.readGenerations(ctx, shard, batch, &progress, report)
	if errors.Is(err, objstore.ErrNotFound) {
		// A racing merge folded and deleted it: confirm through the watermark.
		if latest, lerr := s.tbl.Latest(ctx); lerr == nil && latest.WALWatermarks[shard] >= batch[0].Gen {
			s.metrics.merges.WithLabelValues("lost_race").Inc()
			return MergeResult{Remaining: len(pending)}, nil
		}
	}
	if err != nil {
		return MergeResult{}, err
	}
	rows := rec.NumRows()
	progress.Phase, progress.RowsMerged = "committing", rows
	report()
	first, last := batch[0].Gen, batch[len(batch)-1].Gen
	up, err := s.tbl.Upsert(ctx, rec, table.UpsertOptions{
		Merge:      true,
		Watermarks: map[string]uint64{shard: last},
		Precondition: func(m *table.Manifest) error {
			if m.WALWatermarks[shard] >= first {
				return errAlreadyMerged
			}
			return nil
		},
	})
	rec.Release()
	res.Release() // the commit has consumed the batches
	if errors.Is(err, errAlreadyMerged) {
		s.metrics.merges.WithLabelValues("lost_race").Inc()
		s.dropMerged(ctx, shard, last)
		return MergeResult{Remaining: len(pending)}, nil
	}
	if err != nil {
		s.metrics.merges.WithLabelValues("error").Inc()
		return MergeResult{}, err
	}
	progress.Phase = "dropping"
	report()
	s.dropMerged(ctx, shard, last)
	s.metrics.merges.WithLabelValues("merged").Inc()
	s.metrics.generationsMerged.Add(float64(len(batch)))
	s.metrics.rowsMerged.Add(float64(rows))
	s.metrics.mergeDuration.Observe(time.Since(start).Seconds())
	progress.Phase = "done"
	report()
	return MergeResult{Generations: len(batch), Rows: rows, Remaining: len(pending) - len(batch), Version: up.Manifest.Version}, nil
}

// mergeMemoryFactor converts a generation's bytes (its WAL entries, or a format 1 file) into the
// memory merging it takes at peak: the fetched bytes, the decoded Arrow batches, and their
// concatenation that the upsert sorts and deduplicates. Caps and budget reservations are in
// these bytes, so the budget bounds real memory.
const mergeMemoryFactor = 3

func footprint(g Generation) int64 { return g.Bytes * mergeMemoryFactor }

// selectGenerations takes the oldest generations up to maxGens and maxBytes of merge footprint
// (negative = no limit). A generation is never split and never pushes the batch past maxBytes,
// except that the first one is always taken (an oversized generation still progresses, alone).
func selectGenerations(pending []Generation, maxGens int, maxBytes int64) []Generation {
	var out []Generation
	var bytes int64
	for _, g := range pending {
		if maxGens > 0 && len(out) == maxGens {
			break
		}
		if maxBytes > 0 && len(out) > 0 && bytes+footprint(g) > maxBytes {
			break
		}
		out = append(out, g)
		bytes += footprint(g)
	}
	return out
}

func totalFootprint(gens []Generation) int64 {
	var n int64
	for _, g := range gens {
		n += footprint(g)
	}
	return n
}

// readGenerations reads and concatenates the generations' rows (the upsert dedupes them).
func (s *Store) readGenerations(ctx context.Context, shard string, gens []Generation, progress *MergeProgress, report func()) (arrow.RecordBatch, error) {
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for _, g := range gens {
		recs, err := s.generationRows(ctx, shard, g)
		if err != nil {
			return nil, fmt.Errorf("memwal: read generation %d of shard: %w", g.Gen, err)
		}
		parts = append(parts, recs...)
		progress.GenerationsRead++
		report()
	}
	return arrowutil.Concat(s.schema, parts, s.mem)
}

// dropMerged removes generations at or below gen from the shard manifest (and the WAL segments
// that no longer hold anything needed), then deletes their files, those segments and the WAL
// entries the generations held, before it returns (the merge owns these deletions). Both steps
// are best effort: the watermark already marks the rows merged, the next merge drops what is
// left in the manifest, and the shard writer's garbage sweep deletes what is left on storage.
func (s *Store) dropMerged(ctx context.Context, shard string, gen uint64) {
	var dropped []Generation
	var segGarbage []SegmentRef
	_, err := updateShard(ctx, s.objects, shard, func(cur *ShardManifest) (*ShardManifest, error) {
		dropped = nil
		keep := cur.Generations[:0:0]
		for _, g := range cur.Generations {
			if g.Gen <= gen {
				dropped = append(dropped, g)
			} else {
				keep = append(keep, g)
			}
		}
		if len(dropped) == 0 {
			return nil, errStopEdit
		}
		cur.Generations = keep
		segGarbage = cur.dropGarbageSegments()
		return cur, nil
	})
	if err != nil || len(dropped) == 0 {
		return
	}
	if w := s.residentWriter(); w != nil && w.shard == shard {
		w.pending.Add(-int64(len(dropped)))
	}
	keys := segmentKeys(shard, refNames(segGarbage))
	var ranges [][2]uint64
	for _, g := range dropped {
		if g.Path != "" {
			keys = append(keys, g.Path)
		}
		keys = append(keys, g.KeysPath)
		cache.Remove(s.cache, g.KeysPath)
		if g.entryBacked() {
			ranges = append(ranges, [2]uint64{g.FirstEntry, g.LastEntry})
		}
	}
	if entries, ok := entryKeysIn(shard, ranges...); ok {
		keys = append(keys, entries...)
	} else if listing, err := objstore.ListAll(ctx, s.objects, entryPrefix(shard)); err == nil {
		for _, o := range listing {
			p, ok := parseNumbered(o.Key, entryPrefix(shard), ".arrows")
			if ok && slices.ContainsFunc(ranges, func(r [2]uint64) bool { return r[0] <= p && p <= r[1] }) {
				keys = append(keys, o.Key)
			}
		}
	}
	deleteWALObjects(ctx, s, shard, keys)
}
