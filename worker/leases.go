// Leases: the API's way to start and end read tokens' SnapshotLease workflows.
package worker

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/workflows"
)

// Leases implements the API's Leaser with a Temporal client.
type Leases struct {
	Client client.Client
}

// StartLease starts the token's SnapshotLease workflow.
func (l Leases) StartLease(ctx context.Context, id string, expiresAt time.Time) error {
	_, err := l.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.SnapshotLeaseWorkflowID(id),
		TaskQueue:                workflows.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "read token " + id + " until " + expiresAt.UTC().Format(time.RFC3339),
	}, workflows.WorkflowSnapshotLease, workflows.SnapshotLeaseInput{ID: id, ExpiresAt: expiresAt})
	return err
}

// EndLease signals the token's workflow to release it now; a workflow that already ended is not
// an error.
func (l Leases) EndLease(ctx context.Context, id string) error {
	err := l.Client.SignalWorkflow(ctx, workflows.SnapshotLeaseWorkflowID(id), "", workflows.ReleaseSignal, nil)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}
