// SnapshotLease: one workflow per read token (workflow ID snapshot/<id>), started when the token
// is taken. It waits until the token's expiry or a "release" signal (DELETE /api/v1/snapshots/{id}
// sends it), then marks the token released in the catalog, which ends its holds: the stores'
// next merges and cleanups release the table versions and generations it kept. It makes a lease
// visible in the Temporal UI; safety does not depend on it (the catalog's expiry ends a token
// whose workflow never ran, and cleanup reads the catalog, never the workflow).
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// SnapshotLeaseInput names the token and when it expires.
type SnapshotLeaseInput struct {
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// SnapshotLeaseResult says how the lease ended.
type SnapshotLeaseResult struct {
	Released bool `json:"released"` // released early by a signal (false: it expired)
}

// ReleaseSignal ends a lease before its expiry.
const ReleaseSignal = "release"

// SnapshotLeaseWorkflowID is the workflow ID of a token's lease.
func SnapshotLeaseWorkflowID(id string) string { return "snapshot/" + id }

// SnapshotLease is the workflow function.
func SnapshotLease(ctx workflow.Context, in SnapshotLeaseInput) (SnapshotLeaseResult, error) {
	var res SnapshotLeaseResult
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimer(timerCtx, max(in.ExpiresAt.Sub(workflow.Now(ctx)), 0))
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.AddReceive(workflow.GetSignalChannel(ctx, ReleaseSignal), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		res.Released = true
		cancelTimer()
	})
	sel.Select(ctx)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: time.Minute,
		Summary:             "release read token " + in.ID,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: time.Minute},
	})
	err := workflow.ExecuteActivity(ctx, ActivityReleaseSnapshot, in.ID).Get(ctx, nil)
	return res, err
}
