package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

// readmeTemporalCommands returns every `bin/temporal ...` command of the README (continuation
// lines joined), keyed by its subcommand ("workflow list", "schedule trigger", ...).
func readmeTemporalCommands(t *testing.T) map[string]string {
	data, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	cmds := map[string]string{}
	re := regexp.MustCompile(`(?m)^bin/temporal (\S+) (\S+)[^\n]*$`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		key := m[1] + " " + m[2]
		if _, seen := cmds[key]; !seen {
			cmds[key] = regexp.MustCompile(`\s+`).ReplaceAllString(m[0], " ")
		}
	}
	return cmds
}

// TestTheReadmesTemporalRecipesWorkAsWritten runs the README's `temporal` CLI recipes, exactly as
// written, against the dev server (in a namespace of its own, named by TEMPORAL_NAMESPACE): a
// merge of store rollout/exp-1 fails, the failing store is found by its search attribute and in
// the catalog, the retry signal, an activity reset and a workflow reset retry it after the fix,
// the sweep schedule is triggered and a registry cleanup is started by hand.
func TestTheReadmesTemporalRecipesWorkAsWritten(t *testing.T) {
	addr := os.Getenv("STRATA_TEST_TEMPORAL_ADDRESS")
	if addr == "" {
		t.Skip("STRATA_TEST_TEMPORAL_ADDRESS is not set (make test starts the Temporal dev server and sets it)")
	}
	if _, err := os.Stat("../bin/temporal"); err != nil {
		t.Skip("bin/temporal is missing (make tools installs it)")
	}
	recipes := readmeTemporalCommands(t)
	for _, want := range []string{"workflow signal-with-start", "workflow list", "workflow describe", "workflow signal",
		"activity reset", "workflow reset", "schedule trigger", "workflow start"} {
		require.Contains(t, recipes, want, "the README shows a recipe for `temporal %s`", want)
	}
	ctx := context.Background()
	namespace := fmt.Sprintf("strata-recipes-%d", time.Now().UnixNano())
	nc, err := client.NewNamespaceClient(client.Options{HostPort: addr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.NoError(t, nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}))
	nc.Close()
	var c client.Client
	require.Eventually(t, func() bool { // a new namespace takes a moment to reach every service
		if c == nil {
			c, _ = client.Dial(client.Options{HostPort: addr, Namespace: namespace, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		}
		return c != nil && worker.EnsureSearchAttributes(ctx, c, namespace) == nil
	}, 30*time.Second, 200*time.Millisecond)
	t.Cleanup(c.Close)
	require.NoError(t, worker.EnsureSearchAttributes(ctx, c, namespace), "registering twice is fine")

	cat, mgr, faults := startFaultyWorker(t, c)
	require.NoError(t, worker.EnsureSchedules(ctx, c, time.Hour, workflows.SweepInput{}))
	t.Cleanup(func() {
		for _, id := range []string{workflows.SweepScheduleID, workflows.RegistryCleanupScheduleID} {
			_ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background())
		}
		_ = c.TerminateWorkflow(context.Background(), "store/rollout/exp-1", "", "test over")
	})

	_, _, err = mgr.Create(ctx, catalog.KindRollout, "exp-1", nil, nil)
	require.NoError(t, err)
	seal := func(id string) {
		s, release, err := mgr.Acquire(ctx, catalog.KindRollout, "exp-1")
		require.NoError(t, err)
		defer release()
		rec := kinds.MinimalRolloutBatch(memory.DefaultAllocator, id)
		defer rec.Release()
		_, err = s.Append(ctx, rec)
		require.NoError(t, err)
		require.NoError(t, s.Flush(ctx))
	}
	seal("r1")
	seal("r2")
	run := func(key string) string {
		cmd := exec.Command("bash", "-c", recipes[key])
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+addr, "TEMPORAL_NAMESPACE="+namespace)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s\n%s", recipes[key], out)
		return string(out)
	}
	failing := func() []catalog.MaintenanceFailure {
		fs, err := cat.ListFailures(ctx, 10)
		require.NoError(t, err)
		return fs
	}
	pending := func() int {
		st, err := cat.GetStoreStats(ctx, catalog.KindRollout, "exp-1")
		if err != nil {
			return -1
		}
		return st.PendingGenerations
	}

	// A merge fails for good (corrupt data is not retried by the activity): found by the list
	// recipe and in the catalog.
	faults.AddRule(objstoretest.Rule{Match: isRead, Err: fmt.Errorf("frame 3: %w", lsm.ErrCorrupt)})
	run("workflow signal-with-start")
	require.Eventually(t, func() bool { return strings.Contains(run("workflow list"), "store/rollout/exp-1") },
		30*time.Second, 500*time.Millisecond, "the failing store is listed")
	fs := failing()
	require.Len(t, fs, 1)
	require.Equal(t, "merge_wal", fs[0].Op)
	require.Equal(t, workflows.ErrCorrupt, fs[0].ErrorType)
	require.Contains(t, run("workflow describe"), "store/rollout/exp-1")

	// The fix, then the retry signal: the merge runs at once and the flag clears.
	faults.Reset()
	run("workflow signal")
	require.Eventually(t, func() bool { return len(failing()) == 0 && pending() == 0 }, 30*time.Second, 200*time.Millisecond)
	require.Eventually(t, func() bool { return !strings.Contains(run("workflow list"), "store/rollout/exp-1") },
		10*time.Second, 500*time.Millisecond, "no longer listed as failing")

	// A merge retrying after a storage fault: the activity reset runs it again at once, long
	// before its next backoff (10 s after the second attempt).
	seal("r3")
	faults.AddRule(objstoretest.Rule{Match: isRead, Err: &os.PathError{Op: "read", Path: "x", Err: syscall.EIO}})
	_, err = worker.RequestMaintenance(ctx, c, workflows.StoreRef{Kind: "rollout", Name: "exp-1"}, workflows.Request{Op: workflows.OpMergeWAL})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := c.DescribeWorkflow(ctx, "store/rollout/exp-1", "")
		// Attempt 3 is scheduled: two attempts failed, the next waits 10 s of backoff.
		return err == nil && len(d.RawResponse.PendingActivities) == 1 && d.RawResponse.PendingActivities[0].Attempt >= 3
	}, 30*time.Second, 100*time.Millisecond, "the merge is in its retries")
	faults.Reset()
	reset := time.Now()
	run("activity reset")
	require.Eventually(t, func() bool { return pending() == 0 }, 30*time.Second, 100*time.Millisecond)
	require.Less(t, time.Since(reset), 9*time.Second, "the reset ran the activity before its backoff was over")

	// A workflow reset starts a new run from the last workflow task.
	before, err := c.DescribeWorkflow(ctx, "store/rollout/exp-1", "")
	require.NoError(t, err)
	run("workflow reset")
	after, err := c.DescribeWorkflow(ctx, "store/rollout/exp-1", "")
	require.NoError(t, err)
	require.NotEqual(t, before.RawResponse.WorkflowExecutionInfo.Execution.RunId, after.RawResponse.WorkflowExecutionInfo.Execution.RunId)

	// The sweep, triggered now.
	run("schedule trigger")
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: `WorkflowType="Sweep"`})
		return err == nil && len(resp.Executions) > 0
	}, 30*time.Second, 200*time.Millisecond)

	// A registry cleanup started by hand runs to completion.
	run("workflow start")
	var res workflows.RegistryCleanupResult
	require.NoError(t, c.GetWorkflow(ctx, "registry-cleanup-now", "").Get(ctx, &res))
}
