// How a store's maintenance workflow keeps its failures visible: the failing operations it
// carries in its state, the search attributes that let the Temporal UI's workflow list find it
// (StrataFailing = true), the catalog row `strata status` shows (written by a local activity),
// and the cooldown an operator can end with the "retry" signal.
package workflows

import (
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// RetrySignal ends a store's cooldown after a failure at once: the failed operation runs again
// (send it from the UI's "Send a Signal" or `temporal workflow signal --name retry`).
const RetrySignal = "retry"

// changeFailuresStayVisible versions the failure handling (failed operations stay queued and
// are published): histories recorded before it replay the old path.
const changeFailuresStayVisible = "failures-stay-visible"

// OutcomeResult is what the outcome activity reports back.
type OutcomeResult struct {
	// SearchAttributes: the worker's namespace has Strata's search attributes, so the workflow
	// may set them (setting an unknown one would fail its workflow task).
	SearchAttributes bool `json:"search_attributes"`
}

var (
	failingKey   = temporal.NewSearchAttributeKeyBool(SearchAttrFailing)
	lastErrorKey = temporal.NewSearchAttributeKeyKeyword(SearchAttrLastError)
)

// maxLastError bounds the StrataLastError value (keyword values are limited in size).
const maxLastError = 1000

func failingIndex(failing []Failure, op Op) int {
	return slices.IndexFunc(failing, func(f Failure) bool { return f.Op == op })
}

// noteFailure records a failed run of op at now: a new streak, or one more failure of one.
func noteFailure(failing []Failure, op Op, err error, now time.Time) []Failure {
	typ, msg := ErrInternal, err.Error()
	var app *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	switch {
	case errors.As(err, &app):
		typ, msg = app.Type(), app.Message()
	case errors.As(err, &timeout):
		typ = ErrTimedOut
	}
	if i := failingIndex(failing, op); i >= 0 {
		f := &failing[i]
		f.ErrorType, f.Message, f.LastAt, f.Count = typ, msg, now, f.Count+1
		return failing
	}
	return append(failing, Failure{Op: op, ErrorType: typ, Message: msg, Since: now, LastAt: now, Count: 1})
}

// recordOutcome writes the outcome to the catalog (best effort: the activity logs a catalog
// error) and reports whether the search attributes may be set: once they could (had), they still
// can — a worker that failed to list them must not leave a flag it set uncleared.
func recordOutcome(ctx workflow.Context, had bool, in OutcomeInput) bool {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 15 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	})
	var res OutcomeResult
	if err := workflow.ExecuteLocalActivity(lctx, ActivityRecordOutcome, in).Get(ctx, &res); err != nil {
		workflow.GetLogger(ctx).Warn("recording the maintenance outcome failed", "store", in.Store.WorkflowID(), "op", in.Op, "error", err)
		return had
	}
	return had || res.SearchAttributes
}

// publishFailing sets the search attributes from the state's failing operations.
func publishFailing(ctx workflow.Context, state StoreMaintenanceInput) {
	if !state.SearchAttributes {
		return
	}
	updates := []temporal.SearchAttributeUpdate{failingKey.ValueSet(len(state.Failing) > 0), lastErrorKey.ValueUnset()}
	if n := len(state.Failing); n > 0 {
		latest := slices.MaxFunc(state.Failing, func(a, b Failure) int { return a.LastAt.Compare(b.LastAt) })
		updates[1] = lastErrorKey.ValueSet(truncate(latest.ErrorType+": "+latest.Message, maxLastError))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("setting search attributes failed", "store", state.Store.WorkflowID(), "error", err)
	}
}

// drainRetries drops retry signals that arrived while nothing was cooling down (a success has
// answered them), so a stale one does not cut a later cooldown short.
func drainRetries(ctx workflow.Context) {
	retry := workflow.GetSignalChannel(ctx, RetrySignal)
	for retry.ReceiveAsync(nil) {
	}
}

// coolDown waits pause, or until the retry signal arrives.
func coolDown(ctx workflow.Context, pause time.Duration) error {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, pause)
	retry := workflow.GetSignalChannel(ctx, RetrySignal)
	var timerErr error
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(f workflow.Future) { timerErr = f.Get(ctx, nil) })
	sel.AddReceive(retry, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		workflow.GetLogger(ctx).Info("retry signalled: the cooldown ends now")
	})
	sel.Select(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return timerErr
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
