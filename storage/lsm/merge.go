// WAL merge: fold one shard's oldest sealed generations into the base table.
//
// planMerge (pure) chooses the batch; MergeShard carries it out.
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
package lsm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-store/strata/storage/shard"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// MergeOptions bound one merge pass.
type MergeOptions struct {
	MaxGenerations int   // default 8; negative = no limit
	MaxBytes       int64 // merge memory cap (file bytes x mergeMemoryFactor), default 1 GiB; negative = no limit
	// UncompressedBelowRows: a merge of fewer rows writes its fragment uncompressed, since
	// compaction rewrites (and compresses) every fragment under its target with its size tier:
	// pass the compaction's target rows. Default table.DefaultTargetRowsPerFragment; negative =
	// always compressed.
	UncompressedBelowRows int64
	// OnProgress, when set, is told what the merge is doing (for activity heartbeats).
	OnProgress ProgressFunc
	// BetweenPasses, when set, is called by Merge after each pass that leaves another to run, with
	// no merge memory held: the caller may wait there (for its turn at a shared resource); an
	// error ends the merge with what the passes before committed.
	BetweenPasses func(ctx context.Context) error
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
func (s *Store) MergeShard(ctx context.Context, shardID string, opts MergeOptions) (MergeResult, error) {
	start := time.Now()
	if opts.MaxGenerations == 0 {
		opts.MaxGenerations = 8
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 1 << 30
	}
	if opts.UncompressedBelowRows == 0 {
		opts.UncompressedBelowRows = table.DefaultTargetRowsPerFragment
	}
	progress := Progress{Phase: PhasePlanning, Shard: shardID}
	report := func() { opts.OnProgress.report(progress) }
	report()

	sm, err := s.shards.LatestManifest(ctx, shardID)
	if err != nil || sm == nil {
		return MergeResult{}, err
	}
	base, err := s.tbl.Latest(ctx)
	if err != nil {
		return MergeResult{}, err
	}
	plan := planMerge(sm, base.WALWatermarks[shardID], opts)
	pending, batch := plan.pending, plan.batch
	if len(batch) == 0 {
		if plan.dropCovered {
			s.dropMerged(ctx, shardID, plan.watermark)
		}
		return MergeResult{Version: base.Version}, nil
	}

	// Reserve the batch's footprint (known from the shardID manifest) before reading anything, in
	// one acquire: a small merge holds little, so concurrency is bounded by bytes, not by the cap.
	progress.Phase = PhaseWaitingForBudget
	report()
	// The index run the merge adds may take in tail runs, built in memory: that is reserved too.
	var keys int64
	for _, g := range batch {
		keys += g.Rows
	}
	res, err := s.opts.Budget.Reserve(ctx, totalFootprint(batch)+s.tbl.IndexRunFootprint(base, keys))
	if err != nil {
		return MergeResult{}, err
	}
	defer res.Release()
	progress.Phase, progress.ReservedBytes = PhaseReading, res.Bytes()
	report()

	parts, err := s.readGenerations(ctx, shardID, batch, &progress, report)
	if errors.Is(err, objstore.ErrNotFound) {
		// A racing merge folded and deleted it: confirm through the watermark.
		if latest, lerr := s.tbl.Latest(ctx); lerr == nil && latest.WALWatermarks[shardID] >= batch[0].Gen {
			s.metrics.merges.WithLabelValues("lost_race").Inc()
			return MergeResult{Remaining: len(pending)}, nil
		}
	}
	if err != nil {
		return MergeResult{}, err
	}
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	progress.Phase, progress.RowsMerged = PhaseCommitting, rows
	report()
	first, last := batch[0].Gen, batch[len(batch)-1].Gen
	up, err := s.tbl.UpsertParts(ctx, parts, table.UpsertOptions{
		Merge:                 true,
		Watermarks:            map[string]uint64{shardID: last},
		UncompressedBelowRows: max(opts.UncompressedBelowRows, 0),
		Precondition: func(m *table.Manifest) error {
			if m.WALWatermarks[shardID] >= first {
				return errAlreadyMerged
			}
			return nil
		},
	})
	releaseBatches(parts)
	res.Release() // the commit has consumed the batches
	if errors.Is(err, errAlreadyMerged) {
		s.metrics.merges.WithLabelValues("lost_race").Inc()
		s.dropMerged(ctx, shardID, last)
		return MergeResult{Remaining: len(pending)}, nil
	}
	if err != nil {
		s.metrics.merges.WithLabelValues("error").Inc()
		return MergeResult{}, err
	}
	progress.Phase = PhaseDropping
	report()
	s.dropMerged(ctx, shardID, last)
	s.metrics.merges.WithLabelValues("merged").Inc()
	s.metrics.generationsMerged.Add(float64(len(batch)))
	s.metrics.rowsMerged.Add(float64(rows))
	s.metrics.mergeDuration.Observe(time.Since(start).Seconds())
	progress.Phase = PhaseDone
	report()
	return MergeResult{Generations: len(batch), Rows: rows, Remaining: len(pending) - len(batch), Version: up.Manifest.Version}, nil
}

// mergeMemoryFactor converts a generation's bytes (its WAL entries, or a format 1 file) into the
// memory merging it takes at peak: the fetched bytes, the decoded Arrow batches, the fragment
// encoded from them (kept whole until it is stored on a store that cannot write in place; a
// chunk of it on one that can, which the factor does not discount) and the one row group
// gathered at a time to encode it. Caps and budget reservations are in these bytes, so the
// budget bounds real memory.
const mergeMemoryFactor = 3

func footprint(g shard.Generation) int64 { return g.Bytes * mergeMemoryFactor }

// selectGenerations takes the oldest generations up to maxGens and maxBytes of merge footprint
// (negative = no limit). A generation is never split and never pushes the batch past maxBytes,
// except that the first one is always taken (an oversized generation still progresses, alone).
func selectGenerations(pending []shard.Generation, maxGens int, maxBytes int64) []shard.Generation {
	var out []shard.Generation
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

func totalFootprint(gens []shard.Generation) int64 {
	var n int64
	for _, g := range gens {
		n += footprint(g)
	}
	return n
}

// readGenerations reads the generations' rows, batch by batch in generation order, each laid
// out as the table schema (the upsert dedupes them and gathers the rows it writes from the
// batches: they are never joined). The caller releases them.
func (s *Store) readGenerations(ctx context.Context, shardID string, gens []shard.Generation, progress *Progress, report func()) ([]arrow.RecordBatch, error) {
	var parts []arrow.RecordBatch
	for _, g := range gens {
		recs, err := s.shards.GenerationRows(ctx, shardID, g)
		if err != nil {
			releaseBatches(parts)
			return nil, fmt.Errorf("lsm: read generation %d of shard: %w", g.Gen, err)
		}
		for i, rec := range recs {
			if !rec.Schema().Equal(s.schema) { // a format 1 generation written before a schema change
				aligned, err := table.Align(rec, s.schema, s.mem)
				if err != nil {
					releaseBatches(parts)
					releaseBatches(recs[i:])
					return nil, fmt.Errorf("lsm: read generation %d of shard: %w", g.Gen, err)
				}
				rec.Release()
				rec = aligned
			}
			parts = append(parts, rec)
		}
		progress.GenerationsRead++
		report()
	}
	if len(parts) == 0 { // generations without rows: an empty batch still advances the watermark
		empty, err := arrowutil.Concat(s.schema, nil, s.mem)
		if err != nil {
			return nil, err
		}
		parts = append(parts, empty)
	}
	return parts, nil
}

// mergePlan is what one merge pass of a shard does, decided from its manifest and the table's
// watermark for it: fold batch (the oldest pending generations within the caps), or, when
// nothing is pending, drop the generations the watermark already covers (a merge that committed
// and then failed to drop them).
type mergePlan struct {
	pending     []shard.Generation // generations above the watermark, oldest first
	batch       []shard.Generation // the ones this pass folds
	watermark   uint64
	dropCovered bool
}

// planMerge plans a merge pass (pure: no I/O).
func planMerge(m *shard.ShardManifest, watermark uint64, opts MergeOptions) mergePlan {
	p := mergePlan{watermark: watermark}
	for _, g := range m.Generations {
		if g.Gen > watermark {
			p.pending = append(p.pending, g)
		}
	}
	p.batch = selectGenerations(p.pending, opts.MaxGenerations, opts.MaxBytes)
	p.dropCovered = len(p.batch) == 0 && len(p.pending) < len(m.Generations)
	return p
}

// dropMerged drops the shard's generations at or below gen, keeping what holders need
// (retention.go; see shard.Access.DropMerged) and,
// when the shard is this process's, tells its writer.
func (s *Store) dropMerged(ctx context.Context, shardID string, gen uint64) {
	n := s.shards.DropMerged(ctx, shardID, gen, s.retain(ctx, shardID))
	if w := s.residentWriter(); w != nil && w.ShardID() == shardID && n > 0 {
		w.NoteMerged(n)
	}
}

func releaseBatches(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
