// Vector indexes in maintenance: after a context store's merge, compaction or key-index build,
// the activity builds the vector indexes the new fragments lack (lsm.BuildVectorIndexes over the
// embedding column, under the store's declared metric), reporting fragments and vectors in the
// heartbeat details. A failed build fails the activity like a failed merge: the workflow retries
// it and the catalog shows it failing.
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

// indexVectors builds the vector indexes store ref's fragments lack (context stores only; other
// kinds have no vector column indexed): how many it built.
func (a *Activities) indexVectors(ctx context.Context, ref workflows.StoreRef, s *lsm.Store, hb *heartbeater) (int, error) {
	if ref.Kind != catalog.KindContext {
		return 0, nil
	}
	_, entry, release, err := a.Stores.AcquireEntry(ctx, ref.Kind, ref.Name)
	if err != nil {
		return 0, err
	}
	release()
	cfg, err := kinds.ParseContextConfig(entry.Options)
	if err != nil {
		return 0, err
	}
	hb.set(func(d *HeartbeatDetails) { d.Phase = Phase(lsm.PhaseIndexingVectors) })
	res, err := s.BuildVectorIndexes(ctx, lsm.VectorIndexOptions{
		Column:  contextEmbeddingColumn,
		Metric:  contexts.VectorMetric(cfg.Metric()),
		MinRows: a.VectorIndexMinRows,
		Progress: func(vectors int64, done, total int) {
			hb.set(func(d *HeartbeatDetails) {
				d.VectorsIndexed, d.FragmentsIndexed, d.FragmentsToIndex = vectors, done, total
			})
		},
		Tick: func() { hb.set(func(d *HeartbeatDetails) { d.BuildTicks++ }) },
	})
	return res.Fragments, err
}
