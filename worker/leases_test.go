package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

const snapshotLeaseHistFile = "testdata/snapshot_lease_history.json"

// A read token's SnapshotLease workflow releases it in the catalog when told to (DELETE
// /api/v1/snapshots/{id}) or at its expiry; the release signal to an ended lease is no error.
func TestSnapshotLeaseReleasesItsToken(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	name := "lease-" + time.Now().Format("150405.000000")
	_, _, err := h.mgr.Create(ctx, catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)
	h.startWorker(t)
	leases := worker.Leases{Client: h.c}
	take := func(id string, ttl time.Duration) client.WorkflowRun {
		_, err := h.cat.CreateSnapshot(ctx, catalog.ReadSnapshot{ID: id, ExpiresAt: time.Now().Add(ttl),
			Stores: []catalog.SnapshotStore{{Kind: catalog.KindRollout, Name: name, Cut: json.RawMessage(`{"table_version":1}`)}}})
		require.NoError(t, err)
		require.NoError(t, leases.StartLease(ctx, id, time.Now().Add(ttl)))
		return h.c.GetWorkflow(ctx, workflows.SnapshotLeaseWorkflowID(id), "")
	}

	released := take(name+"-a", time.Hour)
	require.NoError(t, leases.EndLease(ctx, name+"-a"))
	var res workflows.SnapshotLeaseResult
	require.NoError(t, released.Get(ctx, &res))
	require.True(t, res.Released)
	_, err = h.cat.SnapshotCut(ctx, name+"-a", catalog.KindRollout, name)
	require.ErrorIs(t, err, catalog.ErrGone)
	require.NoError(t, leases.EndLease(ctx, name+"-a"), "signalling an ended lease")
	if os.Getenv("STRATA_RECORD_HISTORY") != "" {
		writeHistory(t, h.c, released.GetID(), released.GetRunID(), snapshotLeaseHistFile)
	}

	expired := take(name+"-b", time.Second)
	require.NoError(t, expired.Get(ctx, &res))
	require.False(t, res.Released)
	snap, err := h.cat.GetSnapshot(ctx, name+"-b")
	require.NoError(t, err)
	require.NotNil(t, snap.ReleasedAt)
}
