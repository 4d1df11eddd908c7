package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

// Against the real Temporal dev server (make test starts it; STRATA_TEST_TEMPORAL_ADDRESS): a
// merge request queued with signal-with-start is run by the maintenance worker and folds the
// store's sealed generations into its base table.
func TestMergeRequestRunsOnTheRealTemporalServer(t *testing.T) {
	h := newHarness(t)
	ctx, cat, mgr, c := context.Background(), h.cat, h.mgr, h.c

	name := "it-" + time.Now().Format("150405.000000")
	_, _, err := mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)
	s, release, err := mgr.Acquire(ctx, catalog.KindRollout, name)
	require.NoError(t, err)
	for g := range 3 {
		appendRow(t, s, string(rune('a'+g)))
		require.NoError(t, s.Flush(ctx))
	}
	release()

	h.startWorker(t)

	ref := workflows.StoreRef{Kind: "rollout", Name: name}
	run, err := worker.RequestMaintenance(ctx, c, ref, workflows.Request{Op: workflows.OpMergeWAL})
	require.NoError(t, err)
	again, err := worker.RequestMaintenance(ctx, c, ref, workflows.Request{Op: workflows.OpMergeWAL})
	require.NoError(t, err)
	require.Equal(t, run.GetRunID(), again.GetRunID(), "one workflow per store: the second request joins it")
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), ref.WorkflowID(), "", "test done") })

	require.Eventually(t, func() bool {
		st, err := cat.GetStoreStats(ctx, catalog.KindRollout, name)
		return err == nil && st.BaseRows == 3 && st.PendingGenerations == 0
	}, 60*time.Second, 100*time.Millisecond, "the scheduled merge folds all three generations")
	desc, err := c.DescribeWorkflow(ctx, ref.WorkflowID(), "")
	require.NoError(t, err)
	require.Equal(t, workflows.WorkflowStoreMaintenance, desc.RawResponse.GetWorkflowExecutionInfo().GetType().GetName())
	summary, err := desc.GetStaticSummary()
	require.NoError(t, err)
	require.Equal(t, "maintenance of rollout/"+name, summary, "the UI shows which store")
}

// Appends create pending generations, the flush sweeper reports them, and the scheduled sweep
// (a real Temporal Schedule on the dev server) merges them with no manual step.
func TestTheScheduledSweepMergesPendingGenerations(t *testing.T) {
	h := newHarness(t)
	ctx, cat, mgr, c := context.Background(), h.cat, h.mgr, h.c
	name := "sweep-" + time.Now().Format("150405.000000")
	_, _, err := mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)
	for g := range 9 {
		s, release, err := mgr.Acquire(ctx, catalog.KindRollout, name)
		require.NoError(t, err)
		appendRow(t, s, string(rune('a'+g)))
		release()
		mgr.FlushPass(ctx, time.Second, nil) // the flush sweeper seals and reports shard stats
	}
	st, err := cat.GetStoreStats(ctx, catalog.KindRollout, name)
	require.NoError(t, err)
	require.Equal(t, 9, st.PendingGenerations)

	h.startWorker(t)
	require.NoError(t, worker.EnsureSweepSchedule(ctx, c, 2*time.Second, workflows.SweepInput{}))
	require.NoError(t, worker.EnsureSweepSchedule(ctx, c, 2*time.Second, workflows.SweepInput{}), "idempotent")
	t.Cleanup(func() {
		_ = c.ScheduleClient().GetHandle(context.Background(), workflows.SweepScheduleID).Delete(context.Background())
		_ = c.TerminateWorkflow(context.Background(), workflows.StoreRef{Kind: "rollout", Name: name}.WorkflowID(), "", "test done")
	})
	require.Eventually(t, func() bool {
		st, err := cat.GetStoreStats(ctx, catalog.KindRollout, name)
		return err == nil && st.BaseRows == 9 && st.PendingGenerations == 0
	}, 60*time.Second, 200*time.Millisecond, "the sweep merged the store")
}

func appendRow(t testing.TB, s *lsm.Store, id string) {
	rec := kinds.MinimalRolloutBatch(memory.DefaultAllocator, id)
	defer rec.Release()
	_, err := s.Append(context.Background(), rec)
	require.NoError(t, err)
}

func TestSchedulesAreCreatedIdempotently(t *testing.T) {
	ctx, c := context.Background(), temporalClient(t)
	t.Cleanup(func() {
		for _, id := range []string{workflows.SweepScheduleID, workflows.RegistryCleanupScheduleID} {
			_ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background())
		}
	})
	require.NoError(t, worker.EnsureSchedules(ctx, c, time.Hour, workflows.SweepInput{}))
	require.NoError(t, worker.EnsureSchedules(ctx, c, time.Hour, workflows.SweepInput{}))
	for _, id := range []string{workflows.SweepScheduleID, workflows.RegistryCleanupScheduleID} {
		desc, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
		require.NoError(t, err, id)
		action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
		require.True(t, ok)
		require.Equal(t, workflows.TaskQueue, action.TaskQueue)
	}
	// A worker started with another --sweep-interval brings the existing schedule to it.
	require.NoError(t, worker.EnsureSchedules(ctx, c, 45*time.Minute, workflows.SweepInput{}))
	desc, err := c.ScheduleClient().GetHandle(ctx, workflows.SweepScheduleID).Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, 45*time.Minute, desc.Schedule.Spec.Intervals[0].Every)
	// ... and to its sweep thresholds (the schedule's input).
	require.NoError(t, worker.EnsureSchedules(ctx, c, 45*time.Minute, workflows.SweepInput{MinPendingGenerations: 3}))
	desc, err = c.ScheduleClient().GetHandle(ctx, workflows.SweepScheduleID).Describe(ctx)
	require.NoError(t, err)
	action := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	var in workflows.SweepInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(action.Args[0].(*commonpb.Payload), &in))
	require.Equal(t, 3, in.MinPendingGenerations)
	require.Equal(t, 1024, in.MaxRequests, "defaults are written out, so the Schedules page shows them")
}

// Many concurrent requests for one store, on the real server: the store's activities never
// overlap (an overlap detector wraps them) and every distinct request runs.
func TestRequestsForOneStoreNeverOverlap(t *testing.T) {
	ctx, c := context.Background(), temporalClient(t)

	var mu sync.Mutex
	running, maxRunning := 0, 0
	ran := map[workflows.Op]int{}
	detector := func(ctx context.Context, in workflows.ActivityInput) (workflows.ActivityResult, error) {
		mu.Lock()
		running++
		maxRunning = max(maxRunning, running)
		ran[in.Request.Op]++
		mu.Unlock()
		time.Sleep(30 * time.Millisecond) // long enough for overlaps to show if they could happen
		mu.Lock()
		running--
		mu.Unlock()
		return workflows.ActivityResult{}, nil
	}
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{MaxConcurrentActivityExecutionSize: 8})
	w.RegisterWorkflowWithOptions(workflows.StoreMaintenance, workflow.RegisterOptions{Name: workflows.WorkflowStoreMaintenance})
	for _, name := range []string{workflows.ActivityMergeWAL, workflows.ActivityBuildKeyIndex, workflows.ActivityCompact,
		workflows.ActivityCleanupVersions, workflows.ActivityStatsRefresh} {
		w.RegisterActivityWithOptions(detector, activity.RegisterOptions{Name: name})
	}
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	ref := workflows.StoreRef{Kind: "rollout", Name: "overlap-" + time.Now().Format("150405.000000")}
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), ref.WorkflowID(), "", "test done") })
	ops := []workflows.Op{workflows.OpMergeWAL, workflows.OpCompact, workflows.OpBuildKeyIndex, workflows.OpCleanupVersions, workflows.OpStatsRefresh}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := worker.RequestMaintenance(ctx, c, ref, workflows.Request{Op: ops[i%len(ops)]})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == len(ops) && running == 0
	}, 30*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, maxRunning, "one store's maintenance never overlaps")
	for _, op := range ops {
		require.GreaterOrEqual(t, ran[op], 1, "%s ran", op)
		require.LessOrEqual(t, ran[op], 4, "%s: identical queued requests are deduplicated", op)
	}
}

// sealGenerations creates the rollout store name and seals n generations of one row each
// ("a", "b", ...) into it.
func sealGenerations(t testing.TB, mgr *storecache.Manager, name string, n int) {
	ctx := context.Background()
	_, _, err := mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)
	s, release, err := mgr.Acquire(ctx, catalog.KindRollout, name)
	require.NoError(t, err)
	defer release()
	for g := range n {
		appendRow(t, s, string(rune('a'+g)))
		require.NoError(t, s.Flush(ctx))
	}
}

// A worker stopped mid-merge (its activity is cancelled while it waits for merge memory): another
// worker retries and finishes, the dead attempt's reservation does not leak, no row is lost or
// duplicated.
func TestAnotherWorkerFinishesAMergeWhenTheFirstDies(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	name := "kill-" + time.Now().Format("150405.000000")
	sealGenerations(t, h.mgr, name, 3)

	// Worker A: its process-wide budget is exhausted, so its merge waits (heartbeating).
	budgetA := budget.New(1<<20, nil)
	hold, err := budgetA.Reserve(ctx, 1<<20)
	require.NoError(t, err)
	defer hold.Release()
	mgrA, err := storecache.New(h.cat, storecache.Config{DataURL: h.mgr.DataURL(), Store: lsm.Options{Instance: "maint-a", Budget: budgetA}}, nil,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	defer func() { _ = mgrA.Close(ctx) }()
	wA := worker.New(h.c, &activities.Activities{Stores: mgrA}, worker.Options{StopTimeout: 100 * time.Millisecond})
	require.NoError(t, wA.Start())

	ref := workflows.StoreRef{Kind: "rollout", Name: name}
	_, err = worker.RequestMaintenance(ctx, h.c, ref, workflows.Request{Op: workflows.OpMergeWAL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.c.TerminateWorkflow(context.Background(), ref.WorkflowID(), "", "test done") })
	require.Eventually(t, func() bool { return budgetA.Waiters() == 1 }, 20*time.Second, 10*time.Millisecond, "worker A is mid-merge")
	wA.Stop() // worker A dies; its attempt is cancelled
	require.Eventually(t, func() bool { return budgetA.Waiters() == 0 }, 10*time.Second, 5*time.Millisecond,
		"the cancelled attempt stops waiting")
	require.EqualValues(t, 1<<20, budgetA.Reserved(), "the dead attempt holds nothing")

	h.startWorker(t) // worker B
	require.Eventually(t, func() bool {
		st, err := h.cat.GetStoreStats(ctx, catalog.KindRollout, name)
		return err == nil && st.BaseRows == 3 && st.PendingGenerations == 0
	}, 60*time.Second, 100*time.Millisecond, "worker B retried and finished the merge")
	s, release, err := h.mgr.Acquire(ctx, catalog.KindRollout, name)
	require.NoError(t, err)
	defer release()
	page, err := s.Scan(ctx, lsm.ScanOptions{Columns: []string{"id"}})
	require.NoError(t, err)
	defer page.Rows.Release()
	require.EqualValues(t, 3, page.Rows.NumRows(), "no row lost or duplicated")
	m, err := s.TableManifest(ctx)
	require.NoError(t, err)
	require.NoError(t, s.CheckTable(ctx, m))
}

// On the real dev server: a storage read that hangs inside a merge (deaf to its context, as a
// hung disk is) ends the attempt within the stall timeout plus its grace, as StorageStalled; the
// merge memory is released once the call returns; the retry completes and nothing is lost.
func TestAHungReadInAMergeEndsTheAttemptAndTheRetryCompletes(t *testing.T) {
	addr := os.Getenv("STRATA_TEST_TEMPORAL_ADDRESS")
	if addr == "" {
		t.Skip("STRATA_TEST_TEMPORAL_ADDRESS is not set (make test starts the Temporal dev server and sets it)")
	}
	h := newHarness(t)
	ctx := context.Background()
	merges := budget.New(64<<20, nil)
	mgr, faults := faultyManager(t, h.cat, h.mgr.DataURL(), lsm.Options{Instance: "maint", ReadOnly: true, Budget: merges})
	name := "hung-" + time.Now().Format("150405.000000")
	sealGenerations(t, h.mgr, name, 3)

	stuck := make(chan struct{})
	var once sync.Once
	unstick := func() { once.Do(func() { close(stuck) }) }
	defer unstick()
	faults.AddRule(objstoretest.Rule{Stuck: stuck, Times: 1,
		Match: isRead})
	reg := prometheus.NewRegistry()
	w := worker.New(h.c, &activities.Activities{Stores: mgr, StallTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond,
		Metrics: activities.NewMetrics(reg)}, worker.Options{})
	require.NoError(t, w.Start())
	defer w.Stop()
	ref := workflows.StoreRef{Kind: "rollout", Name: name}
	start := time.Now()
	_, err := worker.RequestMaintenance(ctx, h.c, ref, workflows.Request{Op: workflows.OpMergeWAL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.c.TerminateWorkflow(context.Background(), ref.WorkflowID(), "", "test done") })

	// The first attempt stalls; the worker reports it as StorageStalled and the server retries.
	var lastFailure string
	require.Eventually(t, func() bool {
		d, err := h.c.DescribeWorkflow(ctx, ref.WorkflowID(), "")
		if err != nil || len(d.RawResponse.PendingActivities) == 0 {
			return false
		}
		a := d.RawResponse.PendingActivities[0]
		lastFailure = a.GetLastFailure().GetApplicationFailureInfo().GetType()
		return a.Attempt >= 2 && lastFailure != ""
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, workflows.ErrStorageStalled, lastFailure)
	require.Less(t, time.Since(start), 1*time.Second+10*time.Second, "within the stall timeout, the grace and slack")
	unstick() // the disk answers: the abandoned attempt's goroutine finishes and frees its memory
	require.Eventually(t, func() bool {
		st, err := h.cat.GetStoreStats(ctx, catalog.KindRollout, name)
		return err == nil && st.BaseRows == 3 && st.PendingGenerations == 0
	}, 60*time.Second, 100*time.Millisecond, "the retry merged everything: %v", describeForTest(h, ref))
	require.Eventually(t, func() bool { return merges.Reserved() == 0 }, 10*time.Second, 10*time.Millisecond, "the merge memory is released")
}

// describeForTest summarises a store workflow's pending activities (for failure messages).
func describeForTest(h *harness, ref workflows.StoreRef) string {
	d, err := h.c.DescribeWorkflow(context.Background(), ref.WorkflowID(), "")
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, a := range d.RawResponse.PendingActivities {
		out = append(out, fmt.Sprintf("%s attempt %d state %s last failure %q", a.GetActivityType().GetName(), a.Attempt, a.State, a.GetLastFailure().GetMessage()))
	}
	return strings.Join(out, "; ")
}
