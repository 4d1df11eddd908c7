// Vector indexes in maintenance: after a context store's merge, compaction or key-index build,
// the activity builds the vector indexes the new fragments lack (lsm.BuildVectorIndexes over the
// embedding column, under the store's declared metric), reporting fragments and vectors in the
// heartbeat details. A failed build fails the activity like a failed merge: the workflow retries
// it and the catalog shows it failing. The stats count a fragment that lacks its vector index as
// not index-covered, so the sweep queues index work for it as for a key-index gap.
package activities

import (
	"context"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/workflows"
)

// contextEmbeddingColumn is the column a context store's vector indexes cover.
const contextEmbeddingColumn = "embedding"

// vectorIndexOptions is what store ref's vector indexes cover (the embedding column, under the
// store's declared metric); ok is false for kinds without vector indexes.
func (a *Activities) vectorIndexOptions(ctx context.Context, ref workflows.StoreRef) (opts lsm.VectorIndexOptions, ok bool, err error) {
	if ref.Kind != catalog.KindContext {
		return opts, false, nil
	}
	_, entry, release, err := a.Stores.AcquireEntry(ctx, ref.Kind, ref.Name)
	if err != nil {
		return opts, false, err
	}
	release()
	cfg, err := kinds.ParseContextConfig(entry.Options)
	if err != nil {
		return opts, false, err
	}
	return lsm.VectorIndexOptions{Column: contextEmbeddingColumn, Metric: contexts.VectorMetric(cfg.Metric()), MinRows: a.VectorIndexMinRows}, true, nil
}

// indexVectors builds the vector indexes store ref's fragments lack (context stores only; other
// kinds have no vector column indexed): how many it built.
func (a *Activities) indexVectors(ctx context.Context, ref workflows.StoreRef, s *lsm.Store, hb *heartbeater) (int, error) {
	opts, ok, err := a.vectorIndexOptions(ctx, ref)
	if !ok || err != nil {
		return 0, err
	}
	hb.set(func(d *HeartbeatDetails) { d.Phase = Phase(lsm.PhaseIndexingVectors) })
	opts.Progress = func(vectors int64, done, total int) {
		hb.set(func(d *HeartbeatDetails) {
			d.VectorsIndexed, d.FragmentsIndexed, d.FragmentsToIndex = vectors, done, total
		})
	}
	opts.Tick = func() { hb.set(func(d *HeartbeatDetails) { d.BuildTicks++ }) }
	res, err := s.BuildVectorIndexes(ctx, opts)
	return res.Fragments, err
}

// vectorUncovered counts store ref's fragments that lack the vector index they should have: the
// stats count them as not index-covered, so the sweep queues index work for them (the index
// activity builds vector indexes too).
func (a *Activities) vectorUncovered(ctx context.Context, ref workflows.StoreRef, s *lsm.Store) (int, error) {
	opts, ok, err := a.vectorIndexOptions(ctx, ref)
	if !ok || err != nil {
		return 0, err
	}
	return s.FragmentsWithoutVectorIndex(ctx, opts)
}
