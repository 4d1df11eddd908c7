package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/compaction"
	"github.com/strata-store/strata/internal/fakemaint"
	"github.com/strata-store/strata/workflows"
)

// With a maintenance worker serving the queue, the compact route runs the compaction as a
// request of the store's workflow (with the route's options) and answers lance-context's shape
// from its result; its failures answer by their stable type; compact/stats reports the running
// compaction and the last failure truthfully.
func TestTheCompactRouteRunsThroughTheStoresWorkflow(t *testing.T) {
	c := newCluster(t)
	var got []workflows.Request
	fake := &fakemaint.Maintainer{RunFunc: func(_ context.Context, s workflows.StoreRef, r workflows.Request) (workflows.ActivityResult, error) {
		got = append(got, r)
		if s.Name == "broken" {
			return workflows.ActivityResult{}, temporal.NewNonRetryableApplicationError("compact rollout/broken: disk full", workflows.ErrObjectStoreUnavailable, nil)
		}
		return workflows.ActivityResult{FragmentsRemoved: 3, FragmentsAdded: 1, FilesRemoved: 4, FilesAdded: 1}, nil
	}}
	fake.SetAvailable(true)
	w := c.worker("w1", func(d *api.Deps) { d.Maintenance = fake })
	for _, name := range []string{"a", "broken"} {
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": name}, nil))
	}
	var resp api.CompactResponse
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts/a/compact", map[string]any{"target_rows_per_fragment": 500, "materialize_deletions": false}, &resp))
	require.Equal(t, api.CompactResponse{FragmentsRemoved: 3, FragmentsAdded: 1, FilesRemoved: 4, FilesAdded: 1}, resp, "files as the workflow counted them")
	require.Equal(t, []workflows.Request{{Op: workflows.OpCompact, Overrides: compaction.Overrides{MinFragments: 2, EverySmallFragment: true, TargetRowsPerFragment: 500, KeepDeletions: true}}}, got,
		"an explicit compaction rewrites every small fragment, not one size tier")

	status, code := errCode(t, w, "POST", "/api/v1/rollouts/broken/compact", nil)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, api.CodeStorageUnavailable, code)

	fake.SetRunning(workflows.ActivityCompact)
	var stats api.CompactStats
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/a/compact/stats", nil, &stats))
	require.True(t, stats.IsCompacting)
	require.Nil(t, stats.LastError)
	now := time.Now()
	require.NoError(t, c.cat.RecordFailure(context.Background(), catalog.MaintenanceFailure{Kind: catalog.KindRollout, Name: "a", Op: "compact",
		ErrorType: workflows.ErrObjectStoreUnavailable, Message: "compact rollout/a: disk full", Since: now, LastAt: now, Failures: 1}))
	fake.SetRunning()
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/a/compact/stats", nil, &stats))
	require.False(t, stats.IsCompacting)
	require.NotNil(t, stats.LastError)
	require.Contains(t, *stats.LastError, "ObjectStoreUnavailable: compact rollout/a: disk full")

	// Without a maintenance worker the route compacts in the handler.
	fake.SetAvailable(false)
	got = nil
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts/a/compact", nil, &resp))
	require.Empty(t, got)
}
