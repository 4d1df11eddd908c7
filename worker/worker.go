// Package worker wires Strata's maintenance into Temporal: the worker on the strata-maintenance
// task queue (a small, fixed number of activity slots, graceful stop) and the client helper that
// queues a maintenance request for a store with signal-with-start (one workflow per store; an
// existing one receives the request).
package worker

import (
	"reflect"

	"context"
	"errors"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/internal/fairshare"
	"github.com/strata-store/strata/workflows"
)

// Options tune the maintenance worker.
type Options struct {
	ActivitySlots int           // concurrent maintenance activities (default 4)
	StopTimeout   time.Duration // how long a stop waits for running activities (default 30s)
}

// activityExecutions: the worker takes up to this many activity tasks from Temporal at once
// (or 16 per slot, when more), far more than it has slots. A store activity then waits in the
// process — a goroutine heartbeating every few seconds — for a slot by its tenant's fair share
// (the Activities' Slots), so a tenant flooding the task queue cannot hold every slot: the
// others' activities are already here, waiting their turn by share, not queued behind the flood
// at the server. Each store's workflow runs one activity at a time, so a tenant's tasks are at
// most its stores needing maintenance at once; past activityExecutions of them, the rest of the
// queue is still first come, first served at the server.
const activityExecutions = 256

// New returns a maintenance worker with every workflow and activity registered.
func New(c client.Client, acts *activities.Activities, opts Options) sdkworker.Worker {
	if opts.ActivitySlots <= 0 {
		opts.ActivitySlots = 4
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	if acts.Slots == nil {
		acts.Slots = fairshare.New(opts.ActivitySlots)
	}
	if acts.Request == nil {
		acts.Request = func(ctx context.Context, store workflows.StoreRef, req workflows.Request) error {
			_, err := RequestMaintenance(ctx, c, store, req)
			return err
		}
	}
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: max(activityExecutions, 16*opts.ActivitySlots),
		WorkerStopTimeout:                  opts.StopTimeout,
		// Heartbeats reach the server at most this often (the SDK's default is 80% of the 30 s
		// heartbeat timeout): the UI's pending activity shows the current phase within seconds.
		MaxHeartbeatThrottleInterval: 5 * time.Second,
		// Hundreds of store workflows wake per sweep tick: more pollers keep their workflow tasks
		// (each a short decision) from queueing behind two long polls.
		MaxConcurrentWorkflowTaskPollers: 8,
		MaxConcurrentActivityTaskPollers: 4,
	})
	Register(w, acts)
	return w
}

// Register registers the workflows and activities on any registry (a worker or a test env).
func Register(r interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.StoreMaintenance, workflow.RegisterOptions{Name: workflows.WorkflowStoreMaintenance})
	r.RegisterWorkflowWithOptions(workflows.Sweep, workflow.RegisterOptions{Name: workflows.WorkflowSweep})
	r.RegisterWorkflowWithOptions(workflows.RegistryCleanup, workflow.RegisterOptions{Name: workflows.WorkflowRegistryCleanup})
	r.RegisterWorkflowWithOptions(workflows.SnapshotLease, workflow.RegisterOptions{Name: workflows.WorkflowSnapshotLease})
	for name, fn := range map[string]any{
		workflows.ActivityMergeWAL:        acts.MergeWAL,
		workflows.ActivityBuildKeyIndex:   acts.BuildKeyIndex,
		workflows.ActivityCompact:         acts.Compact,
		workflows.ActivityCleanupVersions: acts.CleanupVersions,
		workflows.ActivityStatsRefresh:    acts.StatsRefresh,
		workflows.ActivitySweep:           acts.SweepCandidates,
		workflows.ActivityRegistryCleanup: acts.RegistryCleanup,
		workflows.ActivityRecordOutcome:   acts.RecordOutcome,
		workflows.ActivityReleaseSnapshot: acts.ReleaseSnapshot,
	} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// RequestMaintenance queues req for the store, starting its maintenance workflow if none runs
// (signal-with-start: the workflow ID store/<kind>/<name> is the per-store lock).
func RequestMaintenance(ctx context.Context, c client.Client, store workflows.StoreRef, req workflows.Request) (client.WorkflowRun, error) {
	return c.SignalWithStartWorkflow(ctx, store.WorkflowID(), workflows.RequestSignal, req,
		client.StartWorkflowOptions{
			ID:                       store.WorkflowID(),
			TaskQueue:                workflows.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			StaticSummary:            "maintenance of " + string(store.Kind) + "/" + store.Name,
		},
		workflows.WorkflowStoreMaintenance, workflows.StoreMaintenanceInput{Store: store})
}

// EnsureSchedules creates the maintenance schedules unless they exist (visible on the Temporal
// UI's Schedules page): strata-sweep every sweepEvery with sweep as its input (zero fields take
// the defaults), strata-registry-cleanup hourly. Existing ones are updated to match.
func EnsureSchedules(ctx context.Context, c client.Client, sweepEvery time.Duration, sweep workflows.SweepInput) error {
	if err := ensureSchedule(ctx, c, workflows.SweepScheduleID, sweepEvery, workflows.WorkflowSweep, sweep.WithDefaults(),
		"Strata: queue maintenance for stores whose catalog stats need it"); err != nil {
		return err
	}
	return ensureSchedule(ctx, c, workflows.RegistryCleanupScheduleID, time.Hour, workflows.WorkflowRegistryCleanup, workflows.RegistryCleanupInput{},
		"Strata: purge long-deleted stores and quiet shard rows")
}

func ensureSchedule(ctx context.Context, c client.Client, id string, every time.Duration, workflowType string, arg any, note string) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:        id,
			Workflow:  workflowType,
			Args:      []any{arg},
			TaskQueue: workflows.TaskQueue,
		},
		CatchupWindow: time.Minute,
		Note:          note,
	})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	// It exists: bring its interval and input up to this worker's configuration (a changed
	// --sweep-interval takes effect at the next worker start), unless they already match.
	return c.ScheduleClient().GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sched := in.Description.Schedule
			action, ok := sched.Action.(*client.ScheduleWorkflowAction)
			if ok && sched.Spec != nil && len(sched.Spec.Intervals) == 1 && sched.Spec.Intervals[0].Every == every &&
				action.Workflow == workflowType && len(action.Args) == 1 && sameArg(action.Args[0], arg) {
				return nil, temporal.ErrSkipScheduleUpdate
			}
			sched.Spec = &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}}
			sched.Action = &client.ScheduleWorkflowAction{ID: id, Workflow: workflowType, Args: []any{arg}, TaskQueue: workflows.TaskQueue}
			return &client.ScheduleUpdate{Schedule: &sched}, nil
		},
	})
}

// sameArg reports whether a described schedule's argument (an encoded payload) decodes to want.
func sameArg(got, want any) bool {
	p, ok := got.(*commonpb.Payload)
	if !ok {
		return false
	}
	decoded := reflect.New(reflect.TypeOf(want))
	if err := converter.GetDefaultDataConverter().FromPayload(p, decoded.Interface()); err != nil {
		return false
	}
	return reflect.DeepEqual(decoded.Elem().Interface(), want)
}

// RunMaintenance queues req for the store with update-with-start (starting its workflow if none
// runs) and waits until the request has run, returning its result. The request runs in the
// store's one queue, after what is queued before it. A failed run answers with the activity's
// application error (its stable type and message).
func RunMaintenance(ctx context.Context, c client.Client, store workflows.StoreRef, req workflows.Request) (workflows.ActivityResult, error) {
	start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       store.WorkflowID(),
		TaskQueue:                workflows.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "maintenance of " + string(store.Kind) + "/" + store.Name,
	}, workflows.WorkflowStoreMaintenance, workflows.StoreMaintenanceInput{Store: store})
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   store.WorkflowID(),
			UpdateName:   workflows.RunUpdate,
			Args:         []any{req},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return workflows.ActivityResult{}, err
	}
	var res workflows.ActivityResult
	err = h.Get(ctx, &res)
	return res, err
}
