package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/datagen"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

// A hot datagen store (many sealed generations: each datagen append seals) next to rollout
// stores: the scheduled sweep merges every one of them — datagen stores go through the same
// workflows and sweeps, and no store waits behind another — and the datagen store folds the
// same after its merge.
func TestTheSweepMergesAHotDatagenStoreAndItsRolloutNeighbours(t *testing.T) {
	h := newHarness(t)
	ctx, cat, mgr, c := context.Background(), h.cat, h.mgr, h.c
	suffix := time.Now().Format("150405.000000")
	hot := "dg-" + suffix
	_, _, err := mgr.Create(ctx, catalog.KindDatagen, hot, nil, nil)
	require.NoError(t, err)
	s, release, err := mgr.Acquire(ctx, catalog.KindDatagen, hot)
	require.NoError(t, err)
	log := datagen.LogOf(s)
	str := func(v string) *string { return &v }
	const items = 40
	for i := range items {
		item := fmt.Sprint("item-", i)
		idx := int64(0)
		evs := []datagen.Event{
			{EventID: datagen.EventID(item, "created", 0), ItemID: item, RootItemID: item, CheckpointID: "created", EventType: datagen.ItemCreated,
				RunID: "r", WriterEpoch: "w", SchemaVersion: datagen.SchemaVersion},
			{EventID: datagen.EventID(item, "gen", 0), ItemID: item, RootItemID: item, ItemSeq: 1, CheckpointID: "gen", EventType: datagen.StepCompleted,
				StepName: str("gen"), StepKind: str("leaf"), StepIndex: &idx, RunID: "r", WriterEpoch: "w", SchemaVersion: datagen.SchemaVersion},
		}
		batch, err := datagen.NewBatch(evs, time.Now(), memory.DefaultAllocator)
		require.NoError(t, err)
		_, err = log.Append(ctx, batch, false, func(rec arrow.RecordBatch) error {
			if _, err := s.Append(ctx, rec); err != nil {
				return err
			}
			return mgr.Flush(ctx, catalog.KindDatagen, hot, s) // sealed, as the API seals a datagen append: one generation each
		})
		batch.Release()
		require.NoError(t, err)
	}
	release()
	var cold []string
	for i := range 3 {
		name := fmt.Sprintf("ro-%d-%s", i, suffix)
		cold = append(cold, name)
		_, _, err := mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
		require.NoError(t, err)
		for g := range 9 { // past the sweep's default threshold of pending generations
			s, release, err := mgr.Acquire(ctx, catalog.KindRollout, name)
			require.NoError(t, err)
			appendRow(t, s, fmt.Sprint("r", g))
			require.NoError(t, mgr.Flush(ctx, catalog.KindRollout, name, s))
			release()
		}
	}
	st, err := cat.GetStoreStats(ctx, catalog.KindDatagen, hot)
	require.NoError(t, err)
	require.Equal(t, items, st.PendingGenerations)

	h.startWorker(t)
	require.NoError(t, worker.EnsureSweepSchedule(ctx, c, 2*time.Second, workflows.SweepInput{}))
	t.Cleanup(func() {
		_ = c.ScheduleClient().GetHandle(context.Background(), workflows.SweepScheduleID).Delete(context.Background())
		_ = c.TerminateWorkflow(context.Background(), workflows.StoreRef{Kind: "datagen", Name: hot}.WorkflowID(), "", "test done")
		for _, name := range cold {
			_ = c.TerminateWorkflow(context.Background(), workflows.StoreRef{Kind: "rollout", Name: name}.WorkflowID(), "", "test done")
		}
	})
	require.Eventually(t, func() bool {
		for _, name := range cold {
			st, err := cat.GetStoreStats(ctx, catalog.KindRollout, name)
			if err != nil || st.BaseRows != 9 || st.PendingGenerations != 0 {
				return false
			}
		}
		st, err := cat.GetStoreStats(ctx, catalog.KindDatagen, hot)
		return err == nil && st.BaseRows == 2*items && st.PendingGenerations == 0
	}, 90*time.Second, 200*time.Millisecond, "the sweep merged the datagen store and every rollout store")

	s, release, err = mgr.Acquire(ctx, catalog.KindDatagen, hot)
	require.NoError(t, err)
	defer release()
	item, err := datagen.LogOf(s).Fold(ctx, "item-7", false)
	require.NoError(t, err)
	require.NotNil(t, item)
	require.Len(t, item.Trajectory, 1)
	o, err := datagen.LogOf(s).Overview(ctx)
	require.NoError(t, err)
	require.Equal(t, items, o.Items)
	require.Equal(t, map[string]int{"gen": items}, o.CompletedSteps)
}
