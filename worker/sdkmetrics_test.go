package worker_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

// The SDK's client and worker metrics reach the process's registry under strata_temporal_*,
// and pass promlint.
func TestTheTemporalSDKsMetricsAreExported(t *testing.T) {
	addr := os.Getenv("STRATA_TEST_TEMPORAL_ADDRESS")
	if addr == "" {
		t.Skip("STRATA_TEST_TEMPORAL_ADDRESS is not set (make test starts the Temporal dev server and sets it)")
	}
	h := newHarness(t)
	reg := prometheus.NewRegistry()
	c, err := client.Dial(client.Options{HostPort: addr, MetricsHandler: worker.NewSDKMetrics(reg),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w := worker.New(c, &activities.Activities{Stores: h.mgr}, worker.Options{})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	ctx := context.Background()
	name := "sdk-metrics-" + time.Now().Format("150405.000000")
	_, _, err = h.mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)
	res, err := worker.RunMaintenance(ctx, c, workflows.StoreRef{Kind: "rollout", Name: name}, workflows.Request{Op: workflows.OpStatsRefresh})
	require.NoError(t, err)
	require.NotZero(t, res.TableVersion)

	families, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		require.True(t, strings.HasPrefix(f.GetName(), "strata_temporal_"), f.GetName())
	}
	for _, want := range []string{"strata_temporal_request_total", "strata_temporal_request_latency_seconds",
		"strata_temporal_activity_execution_latency_seconds", "strata_temporal_workflow_task_execution_latency_seconds"} {
		require.True(t, names[want], "%s exported (have %v)", want, names)
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
	_ = c.TerminateWorkflow(ctx, workflows.StoreRef{Kind: "rollout", Name: name}.WorkflowID(), "", "test over")
}
