// Maintainer: the API's way into the stores' maintenance workflows — queue a request
// (signal-with-start), run one and wait for its result (update-with-start), and ask what a
// store's workflow is running (its pending activities).
package worker

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/workflows"
)

// Maintainer implements the API's maintenance access with a Temporal client.
type Maintainer struct {
	Client client.Client
}

// Available reports whether a maintenance worker polls the task queue (Temporal answers, and
// a request queued now would run).
func (m Maintainer) Available(ctx context.Context) bool {
	d, err := m.Client.DescribeTaskQueue(ctx, workflows.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	return err == nil && len(d.GetPollers()) > 0
}

// Queue queues req on the store's workflow and returns its run ID.
func (m Maintainer) Queue(ctx context.Context, store workflows.StoreRef, req workflows.Request) (string, error) {
	run, err := RequestMaintenance(ctx, m.Client, store, req)
	if err != nil {
		return "", err
	}
	return run.GetRunID(), nil
}

// Run queues req and waits for its result (RunMaintenance).
func (m Maintainer) Run(ctx context.Context, store workflows.StoreRef, req workflows.Request) (workflows.ActivityResult, error) {
	return RunMaintenance(ctx, m.Client, store, req)
}

// Running names the activities the store's workflow is running or retrying; none when it has
// no workflow.
func (m Maintainer) Running(ctx context.Context, store workflows.StoreRef) ([]string, error) {
	desc, err := m.Client.DescribeWorkflow(ctx, store.WorkflowID(), "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil, nil
	case err != nil:
		return nil, err
	}
	d := desc.RawResponse
	var out []string
	if d.GetWorkflowExecutionInfo().GetCloseTime() != nil {
		return nil, nil
	}
	for _, a := range d.GetPendingActivities() {
		out = append(out, a.GetActivityType().GetName())
	}
	return out, nil
}
