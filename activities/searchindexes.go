// Search indexes in maintenance: after a context store's merge, compaction or key-index build,
// the activity builds the indexes its new fragments lack — the vector index of the embedding
// column under the store's declared metric (lsm.BuildVectorIndexes) and the full-text index of
// the text payload (lsm.BuildTextIndexes) — reporting fragments, vectors and documents in the
// heartbeat details. A failed build fails the activity like a failed merge: the workflow retries
// it and the catalog shows it failing. The stats count a fragment that lacks either index as not
// index-covered, so the sweep queues index work for it as for a key-index gap.
package activities

import (
	"context"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/workflows"
)

// searchIndexOptions is what store ref's search indexes cover (the embedding column under the
// store's declared metric; the text payload); ok is false for kinds without search indexes.
func (a *Activities) searchIndexOptions(ctx context.Context, ref workflows.StoreRef) (vec lsm.VectorIndexOptions, text lsm.TextIndexOptions, ok bool, err error) {
	if ref.Kind != catalog.KindContext {
		return vec, text, false, nil
	}
	_, entry, release, err := a.Stores.AcquireEntry(ctx, ref.Kind, ref.Name)
	if err != nil {
		return vec, text, false, err
	}
	release()
	cfg, err := kinds.ParseContextConfig(entry.Options)
	if err != nil {
		return vec, text, false, err
	}
	vec = lsm.VectorIndexOptions{Column: contexts.EmbeddingColumn, Metric: contexts.VectorMetric(cfg.Metric()), MinRows: a.VectorIndexMinRows}
	text = lsm.TextIndexOptions{Column: contexts.TextColumn, MinRows: a.VectorIndexMinRows}
	return vec, text, true, nil
}

// indexForSearch builds the search indexes store ref's fragments lack (context stores only): how
// many fragments' vector and text indexes it built.
func (a *Activities) indexForSearch(ctx context.Context, ref workflows.StoreRef, s *lsm.Store, hb *heartbeater) (vectors, texts int, err error) {
	vopts, topts, ok, err := a.searchIndexOptions(ctx, ref)
	if !ok || err != nil {
		return 0, 0, err
	}
	hb.set(func(d *HeartbeatDetails) { d.Phase = Phase(lsm.PhaseIndexingVectors) })
	vopts.Progress = func(n int64, done, total int) {
		hb.set(func(d *HeartbeatDetails) {
			d.VectorsIndexed, d.FragmentsIndexed, d.FragmentsToIndex = n, done, total
		})
	}
	vopts.Tick = func() { hb.set(func(d *HeartbeatDetails) { d.BuildTicks++ }) }
	vres, err := s.BuildVectorIndexes(ctx, vopts)
	if err != nil {
		return 0, 0, err
	}
	hb.set(func(d *HeartbeatDetails) {
		d.Phase, d.FragmentsIndexed, d.FragmentsToIndex = Phase(lsm.PhaseIndexingText), 0, 0
	})
	topts.Progress = func(n int64, done, total int) {
		hb.set(func(d *HeartbeatDetails) {
			d.DocumentsIndexed, d.FragmentsIndexed, d.FragmentsToIndex = n, done, total
		})
	}
	tres, err := s.BuildTextIndexes(ctx, topts)
	return vres.Fragments, tres.Fragments, err
}

// searchUncovered counts store ref's fragments that lack a search index they should have: the
// stats count them as not index-covered, so the sweep queues index work for them (the index
// activity builds search indexes too).
func (a *Activities) searchUncovered(ctx context.Context, ref workflows.StoreRef, s *lsm.Store) (int, error) {
	vopts, topts, ok, err := a.searchIndexOptions(ctx, ref)
	if !ok || err != nil {
		return 0, err
	}
	return s.FragmentsWithoutSearchIndexes(ctx, vopts, topts)
}
