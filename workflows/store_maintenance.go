// StoreMaintenance: one long-lived workflow per store (ID store/<kind>/<name>) that serialises
// all of the store's maintenance. Requests arrive as signals (signal-with-start from the sweep,
// the API and operators) and are queued, deduplicated and run one activity at a time, so two
// maintenance operations of one store never overlap. Different stores run in parallel, bounded by
// the worker's activity slots.
//
// The run update queues a request the same way and answers its caller with the request's result
// once it has run (the API's synchronous compact route uses it with update-with-start): every
// operation of a store, however requested, runs in this one queue.
//
// Rules: an operation that exhausts its activity retries stays queued and the store is flagged
// failing (the StrataFailing/StrataLastError search attributes, a row in the catalog that
// `strata status` lists); the store then cools down with exponential backoff (a durable timer,
// holding no activity slot; the "retry" signal ends it early) before its next operation, and the
// failed one runs again until it succeeds, which clears the flag. A store that no longer exists
// ends the workflow. The workflow continues as new when the server suggests it or
// after maxOpsPerRun operations, carrying its queue and failure count, and finishes after idleTimeout
// without requests (pending signals are drained before finishing or continuing, so none is lost).
package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

const (
	idleTimeout  = 2 * time.Minute
	maxOpsPerRun = 200
	cooldownBase = 30 * time.Second
	cooldownMax  = 30 * time.Minute
)

var activityFor = map[Op]string{
	OpMergeWAL: ActivityMergeWAL, OpBuildKeyIndex: ActivityBuildKeyIndex, OpCompact: ActivityCompact,
	OpCleanupVersions: ActivityCleanupVersions, OpStatsRefresh: ActivityStatsRefresh,
}

// activityOptions: long activities heartbeat while they make progress and abandon an attempt
// that stalls (package activities); HeartbeatTimeout ends the attempt of a worker that stopped
// altogether; StartToClose covers waiting for merge memory plus the work; retries back off;
// errors retrying cannot fix are non-retryable.
func activityOptions(store StoreRef, req Request) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    30 * time.Second,
		Summary:             fmt.Sprintf("%s %s/%s", req.Op, store.Kind, store.Name),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        5 * time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        5 * time.Minute,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: nonRetryableErrorTypes,
		},
	}
}

// cooldown is the pause after the n-th consecutive failure.
func cooldown(n int) time.Duration {
	d := cooldownBase
	for i := 1; i < n && d < cooldownMax; i++ {
		d *= 2
	}
	return min(d, cooldownMax)
}

// runOutcome is the result of a request queued by the run update.
type runOutcome struct {
	result ActivityResult
	err    error
}

// validateRequest rejects requests no activity could run.
func validateRequest(r Request) error {
	switch {
	case !r.Op.Valid():
		return fmt.Errorf("unknown maintenance op %q", r.Op)
	case r.MaxPasses < 0, r.TargetRowsPerFragment < 0, r.MinFragments < 0:
		return fmt.Errorf("maintenance request %+v: negative limits", r)
	}
	return nil
}

// waitedFor reports whether a caller of the run update waits for one of the requests.
func waitedFor(pending []Request) bool {
	return slices.ContainsFunc(pending, func(r Request) bool { return r.ID != "" })
}

// callerError is what the run update answers for an activity's error: its application error
// (type and message), without the activity-failure wrapping.
func callerError(err error) error {
	var app *temporal.ApplicationError
	if err != nil && errors.As(err, &app) {
		return temporal.NewNonRetryableApplicationError(app.Message(), app.Type(), nil)
	}
	return err
}

// StoreMaintenance is the workflow function.
func StoreMaintenance(ctx workflow.Context, in StoreMaintenanceInput) error {
	log := workflow.GetLogger(ctx)
	state := in
	// Both signals are declared with descriptions up front: the Web UI's "Send a Signal" lists them.
	requests := workflow.GetSignalChannelWithOptions(ctx, RequestSignal, workflow.SignalChannelOptions{
		Description: `queue a maintenance request, e.g. {"op": "merge_wal"} (ops: merge_wal, build_key_index, compact, cleanup_versions, stats_refresh)`})
	workflow.GetSignalChannelWithOptions(ctx, RetrySignal, workflow.SignalChannelOptions{
		Description: "after a failure: end the cooldown and run the failed operation now (no input)"})
	enqueue := func(r Request) {
		if err := validateRequest(r); err != nil {
			log.Warn("ignoring a maintenance request", "store", state.Store.WorkflowID(), "error", err)
			return
		}
		if !slices.Contains(state.Pending, r) {
			state.Pending = append(state.Pending, r)
		}
	}
	drain := func() {
		for {
			var r Request
			if !requests.ReceiveAsync(&r) {
				return
			}
			enqueue(r)
		}
	}
	// Requests queued by the run update wait for their own result: finished holds it from the
	// moment the request ran until the update handler has returned it.
	finished := map[string]runOutcome{}
	wake := workflow.NewChannel(ctx) // an update queued a request (wakes the idle wait)
	if err := workflow.SetUpdateHandlerWithOptions(ctx, RunUpdate, func(ctx workflow.Context, r Request) (ActivityResult, error) {
		r.ID = workflow.GetCurrentUpdateInfo(ctx).ID
		enqueue(r)
		wake.SendAsync(struct{}{})
		if err := workflow.Await(ctx, func() bool { _, ok := finished[r.ID]; return ok }); err != nil {
			return ActivityResult{}, err
		}
		out := finished[r.ID]
		delete(finished, r.ID)
		return out.result, out.err
	}, workflow.UpdateHandlerOptions{
		Validator:   func(r Request) error { return validateRequest(r) },
		Description: `run a maintenance request now (after what is queued) and answer with its result, e.g. {"op": "compact"}`,
	}); err != nil {
		return err
	}
	carried := state.Pending
	state.Pending = nil
	for _, r := range carried { // validate and dedupe the carried queue, keeping its order
		enqueue(r)
	}

	ops := 0
	for {
		drain()
		if len(state.Pending) == 0 {
			workflow.SetCurrentDetails(ctx, fmt.Sprintf("store %s/%s: idle", state.Store.Kind, state.Store.Name))
			var r Request
			got := false
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(requests, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &r); got = true })
			sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
			expired := false
			sel.AddFuture(workflow.NewTimer(ctx, idleTimeout), func(workflow.Future) { expired = true })
			sel.Select(ctx)
			if got {
				enqueue(r)
				continue
			}
			if !expired { // woken by an update: its request is queued
				continue
			}
			drain()
			if len(state.Pending) == 0 {
				// Updates answered in this task return before the run ends.
				return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
			}
			continue
		}
		if (ops >= maxOpsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) && !waitedFor(state.Pending) {
			drain()
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, StoreMaintenance, state)
		}

		req := state.Pending[0]
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("store %s/%s: running %s; %d queued; %d consecutive failures",
			state.Store.Kind, state.Store.Name, req.Op, len(state.Pending)-1, state.Failures))
		actx := workflow.WithActivityOptions(ctx, activityOptions(state.Store, req))
		var res ActivityResult
		err := workflow.ExecuteActivity(actx, activityFor[req.Op], ActivityInput{Store: state.Store, Request: req}).Get(ctx, &res)
		state.Pending = state.Pending[1:]
		ops++
		if req.ID != "" {
			finished[req.ID] = runOutcome{result: res, err: callerError(err)}
			req.ID = "" // should it have failed, it stays queued like any other request
		}
		if err == nil {
			state.Failures = 0
			if i := failingIndex(state.Failing, req.Op); i >= 0 { // it recovered
				state.Failing = slices.Delete(state.Failing, i, i+1)
				state.SearchAttributes = recordOutcome(ctx, state.SearchAttributes, OutcomeInput{Store: state.Store, Op: req.Op})
				publishFailing(ctx, state)
			}
			drainRetries(ctx)
			continue
		}
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == ErrStoreGone {
			log.Info("store is gone; maintenance ends", "store", state.Store.WorkflowID())
			return nil
		}
		state.Failures++
		pause := cooldown(state.Failures)
		if workflow.GetVersion(ctx, changeFailuresStayVisible, workflow.DefaultVersion, 1) >= 1 {
			// The operation stays queued (it runs again after the cooldown, until it succeeds) and
			// the store is flagged failing: search attributes and the catalog say what and since when.
			state.Failing = noteFailure(state.Failing, req.Op, err, workflow.Now(ctx))
			enqueue(req)
			f := state.Failing[failingIndex(state.Failing, req.Op)]
			state.SearchAttributes = recordOutcome(ctx, state.SearchAttributes, OutcomeInput{Store: state.Store, Op: req.Op, Failure: &f})
			publishFailing(ctx, state)
		}
		log.Warn("maintenance operation failed; cooling down", "store", state.Store.WorkflowID(), "op", req.Op,
			"failures", state.Failures, "cooldown", pause, "error", err)
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("store %s/%s: cooling down %s after %d consecutive failures (last: %s failed: %v); signal %q to retry now",
			state.Store.Kind, state.Store.Name, pause, state.Failures, req.Op, err, RetrySignal))
		if err := coolDown(ctx, pause); err != nil {
			return err
		}
	}
}
