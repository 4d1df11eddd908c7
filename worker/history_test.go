package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

const (
	historyFile      = "testdata/store_maintenance_history.json"
	sweepHistoryFile = "testdata/sweep_history.json"
	cleanupHistFile  = "testdata/registry_cleanup_history.json"
	failureHistFile  = "testdata/store_maintenance_failure_history.json"
)

// TestReplayRecordedHistories replays recorded histories of every workflow: a change that would
// break running workflows (non-determinism) fails here.
func TestReplayRecordedHistories(t *testing.T) {
	r := sdkworker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.StoreMaintenance, workflow.RegisterOptions{Name: workflows.WorkflowStoreMaintenance})
	r.RegisterWorkflowWithOptions(workflows.Sweep, workflow.RegisterOptions{Name: workflows.WorkflowSweep})
	r.RegisterWorkflowWithOptions(workflows.RegistryCleanup, workflow.RegisterOptions{Name: workflows.WorkflowRegistryCleanup})
	r.RegisterWorkflowWithOptions(workflows.SnapshotLease, workflow.RegisterOptions{Name: workflows.WorkflowSnapshotLease})
	for _, f := range []string{historyFile, sweepHistoryFile, cleanupHistFile, failureHistFile, snapshotLeaseHistFile} {
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f), f)
	}
}

// writeHistory saves a finished workflow's history as a replay fixture.
func writeHistory(t *testing.T, c client.Client, workflowID, runID, file string) {
	var events []*historypb.HistoryEvent
	iter := c.GetWorkflowHistory(context.Background(), workflowID, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		events = append(events, e)
	}
	data, err := protojson.MarshalOptions{Indent: " "}.Marshal(&historypb.History{Events: events})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, data, 0o644))
}

// TestRecordSweepHistory re-records the Sweep and RegistryCleanup fixtures (STRATA_RECORD_HISTORY=1 under make
// test's services): one sweep that queues a merge for a store with pending generations.
func TestRecordSweepHistory(t *testing.T) {
	if os.Getenv("STRATA_RECORD_HISTORY") == "" {
		t.Skip("set STRATA_RECORD_HISTORY=1 (and run under make test's services) to re-record the fixture")
	}
	h := newHarness(t)
	ctx, cat, mgr, c := context.Background(), h.cat, h.mgr, h.c
	name := "sweep-history-" + time.Now().Format("150405.000000")
	_, _, err := mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)
	require.NoError(t, cat.UpsertShardStats(ctx, []catalog.ShardStats{{Kind: catalog.KindRollout, Name: name, Shard: "s", PendingGenerations: 9}}))
	h.startWorker(t)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "record-sweep-" + name, TaskQueue: workflows.TaskQueue}, workflows.WorkflowSweep, workflows.SweepInput{})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
	cleanup, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "record-cleanup-" + name, TaskQueue: workflows.TaskQueue}, workflows.WorkflowRegistryCleanup, workflows.RegistryCleanupInput{})
	require.NoError(t, err)
	require.NoError(t, cleanup.Get(ctx, nil))
	writeHistory(t, c, cleanup.GetID(), cleanup.GetRunID(), cleanupHistFile)
	t.Cleanup(func() {
		_ = c.TerminateWorkflow(context.Background(), workflows.StoreRef{Kind: "rollout", Name: name}.WorkflowID(), "", "recorded")
	})
	writeHistory(t, c, run.GetID(), run.GetRunID(), sweepHistoryFile)
}

// TestRecordStoreMaintenanceHistory re-records the replay fixture from the real dev server
// (STRATA_RECORD_HISTORY=1 with make test's services): a run that merges, compacts, refreshes
// stats from signals that arrive while it works, then finishes after its idle timeout (~2 min).
func TestRecordStoreMaintenanceHistory(t *testing.T) {
	if os.Getenv("STRATA_RECORD_HISTORY") == "" {
		t.Skip("set STRATA_RECORD_HISTORY=1 (and run under make test's services) to re-record the fixture")
	}
	h := newHarness(t)
	ctx, cat, mgr, c := context.Background(), h.cat, h.mgr, h.c
	name := "history-" + time.Now().Format("150405.000000")
	_, _, err := mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)

	h.startWorker(t)
	ref := workflows.StoreRef{Kind: "rollout", Name: name}
	run, err := worker.RequestMaintenance(ctx, c, ref, workflows.Request{Op: workflows.OpMergeWAL})
	require.NoError(t, err)
	_, err = worker.RequestMaintenance(ctx, c, ref, workflows.Request{Op: workflows.OpCompact})
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	_, err = cat.SoftDeleteStore(ctx, catalog.KindRollout, name)
	require.NoError(t, err)
	_, err = worker.RequestMaintenance(ctx, c, ref, workflows.Request{Op: workflows.OpStatsRefresh})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))

	writeHistory(t, c, ref.WorkflowID(), run.GetRunID(), historyFile)
}

// TestRecordStoreMaintenanceFailureHistory re-records the failure-path fixture (STRATA_RECORD_HISTORY=1
// with make test's services): a merge fails for good (corrupt data), the store is flagged failing,
// the cause is removed, the retry signal runs the merge again, the flag clears, and the workflow
// finishes after its idle timeout (~2 min).
func TestRecordStoreMaintenanceFailureHistory(t *testing.T) {
	if os.Getenv("STRATA_RECORD_HISTORY") == "" {
		t.Skip("set STRATA_RECORD_HISTORY=1 (and run under make test's services) to re-record the fixture")
	}
	c := temporalClient(t)
	ctx := context.Background()
	require.NoError(t, worker.EnsureSearchAttributes(ctx, c, "default"))
	cat, mgr, faults := startFaultyWorker(t, c)

	name := "failure-history-" + time.Now().Format("150405.000000")
	_, _, err := mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)
	s, release, err := mgr.Acquire(ctx, catalog.KindRollout, name)
	require.NoError(t, err)
	rec := kinds.MinimalRolloutBatch(memory.DefaultAllocator, "r1")
	_, err = s.Append(ctx, rec)
	rec.Release()
	require.NoError(t, err)
	require.NoError(t, s.Flush(ctx))
	release()

	faults.AddRule(objstoretest.Rule{Err: fmt.Errorf("frame 1: %w", lsm.ErrCorrupt),
		Match: isRead})
	ref := workflows.StoreRef{Kind: "rollout", Name: name}
	run, err := worker.RequestMaintenance(ctx, c, ref, workflows.Request{Op: workflows.OpMergeWAL})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		fs, err := cat.ListFailures(ctx, 10)
		return err == nil && len(fs) == 1
	}, 30*time.Second, 100*time.Millisecond)
	faults.Reset()
	require.NoError(t, c.SignalWorkflow(ctx, ref.WorkflowID(), "", workflows.RetrySignal, nil))
	require.NoError(t, run.Get(ctx, nil))
	writeHistory(t, c, ref.WorkflowID(), run.GetRunID(), failureHistFile)
}
