package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/strata-store/strata/internal/compaction"
	"github.com/strata-store/strata/workflows"
)

var store = workflows.StoreRef{Kind: "rollout", Name: "exp"}

// fakeActivities records what ran, in order, and can fail on demand.
type fakeActivities struct {
	ran     []workflows.Op
	at      []time.Time
	running int
	overlap bool
	fail    func(op workflows.Op) error
	env     *testsuite.TestWorkflowEnvironment
	// outcomes the workflow recorded (the catalog's failing-maintenance rows) and search
	// attribute updates it made, in order.
	outcomes []workflows.OutcomeInput
	failing  []bool
}

func (f *fakeActivities) run(op workflows.Op) func(context.Context, workflows.ActivityInput) (workflows.ActivityResult, error) {
	return func(ctx context.Context, in workflows.ActivityInput) (workflows.ActivityResult, error) {
		f.running++
		defer func() { f.running-- }()
		if f.running > 1 {
			f.overlap = true
		}
		f.ran = append(f.ran, in.Request.Op)
		f.at = append(f.at, f.env.Now())
		if f.fail != nil {
			if err := f.fail(op); err != nil {
				return workflows.ActivityResult{}, err
			}
		}
		return workflows.ActivityResult{}, nil
	}
}

func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeActivities) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.StoreMaintenance, workflow.RegisterOptions{Name: workflows.WorkflowStoreMaintenance})
	f := &fakeActivities{env: env}
	for op, name := range map[workflows.Op]string{
		workflows.OpMergeWAL: workflows.ActivityMergeWAL, workflows.OpBuildKeyIndex: workflows.ActivityBuildKeyIndex,
		workflows.OpCompact: workflows.ActivityCompact, workflows.OpCleanupVersions: workflows.ActivityCleanupVersions,
		workflows.OpStatsRefresh: workflows.ActivityStatsRefresh,
	} {
		env.RegisterActivityWithOptions(f.run(op), activity.RegisterOptions{Name: name})
	}
	env.RegisterActivityWithOptions(func(_ context.Context, in workflows.OutcomeInput) (workflows.OutcomeResult, error) {
		f.outcomes = append(f.outcomes, in)
		return workflows.OutcomeResult{SearchAttributes: true}, nil
	}, activity.RegisterOptions{Name: workflows.ActivityRecordOutcome})
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		v, ok := sa.GetBool(temporal.NewSearchAttributeKeyBool(workflows.SearchAttrFailing))
		require.True(t, ok, "StrataFailing is set in every update")
		f.failing = append(f.failing, v)
	}).Return(nil)
	return env, f
}

func TestRequestsRunOneAtATimeDeduplicatedAndTheWorkflowEndsWhenIdle(t *testing.T) {
	env, f := newEnv(t)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.RequestSignal, workflows.Request{Op: workflows.OpMergeWAL}) // already queued: deduplicated
		env.SignalWorkflow(workflows.RequestSignal, workflows.Request{Op: workflows.OpCleanupVersions})
		env.SignalWorkflow(workflows.RequestSignal, workflows.Request{Op: "nonsense"}) // ignored
	}, 0)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.RequestSignal, workflows.Request{Op: workflows.OpStatsRefresh})
	}, time.Minute) // while idle: picked up
	env.ExecuteWorkflow(workflows.StoreMaintenance, workflows.StoreMaintenanceInput{Store: store, Pending: []workflows.Request{
		{Op: workflows.OpMergeWAL}, {Op: workflows.OpCompact}, {Op: workflows.OpMergeWAL},
	}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.False(t, f.overlap)
	require.Equal(t, []workflows.Op{workflows.OpMergeWAL, workflows.OpCompact, workflows.OpCleanupVersions, workflows.OpStatsRefresh}, f.ran)
}

func TestContinueAsNewKeepsQueuedRequests(t *testing.T) {
	env, f := newEnv(t)
	env.SetContinueAsNewSuggested(true)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.RequestSignal, workflows.Request{Op: workflows.OpCleanupVersions})
	}, 0)
	env.ExecuteWorkflow(workflows.StoreMaintenance, workflows.StoreMaintenanceInput{Store: store, Failures: 2,
		Pending: []workflows.Request{{Op: workflows.OpMergeWAL}, {Op: workflows.OpCompact}}})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next workflows.StoreMaintenanceInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, store, next.Store)
	require.Equal(t, 2, next.Failures)
	require.ElementsMatch(t, []workflows.Request{{Op: workflows.OpMergeWAL}, {Op: workflows.OpCompact}, {Op: workflows.OpCleanupVersions}}, next.Pending,
		"queued requests, including signals not yet read, survive continue-as-new")
	require.Empty(t, f.ran)
}

// failFirst fails the first n runs of op.
func failFirst(f *fakeActivities, op workflows.Op, n int) {
	runs := 0
	f.fail = func(o workflows.Op) error {
		if o != op {
			return nil
		}
		runs++
		if runs <= n {
			return temporal.NewApplicationError("compact rollout/exp: disk full: write: no space left on device", workflows.ErrObjectStoreUnavailable)
		}
		return nil
	}
}

func TestAFailingStoreCoolsDownWithBackoff(t *testing.T) {
	env, f := newEnv(t)
	failFirst(f, workflows.OpCompact, 5)
	env.ExecuteWorkflow(workflows.StoreMaintenance, workflows.StoreMaintenanceInput{Store: store, Pending: []workflows.Request{
		{Op: workflows.OpCompact}, {Op: workflows.OpMergeWAL},
	}})
	require.NoError(t, env.GetWorkflowError())
	// Five attempts of compact (the retry policy), then the merge after the cooldown, then the
	// failed compact again.
	require.Equal(t, []workflows.Op{"compact", "compact", "compact", "compact", "compact", "merge_wal", "compact"}, f.ran)
	lastFailure, merge := f.at[4], f.at[5]
	require.GreaterOrEqual(t, merge.Sub(lastFailure), 30*time.Second, "cooled down before the next operation")
}

func TestAFailedOperationStaysQueuedAndFlaggedUntilItSucceeds(t *testing.T) {
	env, f := newEnv(t)
	failFirst(f, workflows.OpCompact, 11) // two runs of five attempts fail; the third run's second attempt succeeds
	env.ExecuteWorkflow(workflows.StoreMaintenance, workflows.StoreMaintenanceInput{Store: store, Pending: []workflows.Request{
		{Op: workflows.OpCompact}, {Op: workflows.OpMergeWAL},
	}})
	require.NoError(t, env.GetWorkflowError(), "the workflow ends idle once nothing fails")
	require.Equal(t, []workflows.Op{"compact", "compact", "compact", "compact", "compact", "merge_wal",
		"compact", "compact", "compact", "compact", "compact", "compact", "compact"}, f.ran)
	require.Len(t, f.outcomes, 3)
	first, second, cleared := f.outcomes[0], f.outcomes[1], f.outcomes[2]
	require.Equal(t, workflows.OpCompact, first.Op)
	require.Equal(t, workflows.ErrObjectStoreUnavailable, first.Failure.ErrorType)
	require.Contains(t, first.Failure.Message, "disk full")
	require.Equal(t, 1, first.Failure.Count)
	require.Equal(t, 2, second.Failure.Count)
	require.Equal(t, first.Failure.Since, second.Failure.Since, "the streak keeps its start")
	require.True(t, second.Failure.LastAt.After(first.Failure.LastAt))
	require.Nil(t, cleared.Failure, "success clears the failure")
	require.Equal(t, []bool{true, true, false}, f.failing, "StrataFailing set while failing, cleared on success")
}

func TestTheRetrySignalEndsTheCooldown(t *testing.T) {
	env, f := newEnv(t)
	failFirst(f, workflows.OpCompact, 5)
	// The five attempts take 5+10+20+40 s of activity backoff; the store then cools down 30 s.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.RetrySignal, nil) }, 80*time.Second)
	env.ExecuteWorkflow(workflows.StoreMaintenance, workflows.StoreMaintenanceInput{Store: store, Pending: []workflows.Request{
		{Op: workflows.OpCompact}, {Op: workflows.OpMergeWAL},
	}})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []workflows.Op{"compact", "compact", "compact", "compact", "compact", "merge_wal", "compact"}, f.ran)
	require.Less(t, f.at[5].Sub(f.at[4]), 30*time.Second, "the signal ended the cooldown")
}

func TestAStoreThatIsGoneEndsMaintenanceWithoutRetries(t *testing.T) {
	env, f := newEnv(t)
	f.fail = func(workflows.Op) error {
		return temporal.NewNonRetryableApplicationError("store rollout/exp does not exist", workflows.ErrStoreGone, nil)
	}
	env.ExecuteWorkflow(workflows.StoreMaintenance, workflows.StoreMaintenanceInput{Store: store, Pending: []workflows.Request{
		{Op: workflows.OpMergeWAL}, {Op: workflows.OpCompact},
	}})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []workflows.Op{workflows.OpMergeWAL}, f.ran, "no retry, and the rest of the queue is dropped")
}

func TestCooldownGrowsAndIsCapped(t *testing.T) {
	require.Equal(t, "map[1:30s 2:1m0s 3:2m0s 10:30m0s]", workflows.FmtCooldowns(1, 2, 3, 10))
}

func TestSweepRunsTheCandidateActivityWithDefaults(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Sweep, workflow.RegisterOptions{Name: workflows.WorkflowSweep})
	var got workflows.SweepInput
	env.RegisterActivityWithOptions(func(_ context.Context, in workflows.SweepInput) (workflows.SweepResult, error) {
		got = in
		return workflows.SweepResult{Queued: map[workflows.Op]int{workflows.OpMergeWAL: 2}}, nil
	}, activity.RegisterOptions{Name: workflows.ActivitySweep})
	env.ExecuteWorkflow(workflows.Sweep, workflows.SweepInput{MaxRequests: 5})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.SweepResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 2, res.Queued[workflows.OpMergeWAL])
	require.Equal(t, 5, got.MaxRequests)
	require.Equal(t, 8, got.MinPendingGenerations, "defaults fill the rest")
}

func TestRegistryCleanupRunsItsActivityWithDefaults(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.RegistryCleanup, workflow.RegisterOptions{Name: workflows.WorkflowRegistryCleanup})
	var got workflows.RegistryCleanupInput
	env.RegisterActivityWithOptions(func(_ context.Context, in workflows.RegistryCleanupInput) (workflows.RegistryCleanupResult, error) {
		got = in
		return workflows.RegistryCleanupResult{StoresPurged: 1}, nil
	}, activity.RegisterOptions{Name: workflows.ActivityRegistryCleanup})
	env.ExecuteWorkflow(workflows.RegistryCleanup, workflows.RegistryCleanupInput{})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 24*time.Hour, got.Grace)
	require.Equal(t, 100, got.MaxStores)
}

// The run update queues its request behind what is queued and answers with that run's result
// (or its error, typed); an invalid request is rejected before anything is queued.
func TestTheRunUpdateAnswersWithTheResultOfItsOwnRun(t *testing.T) {
	env, f := newEnv(t)
	failFirst(f, workflows.OpCleanupVersions, 5)
	type answer struct {
		res workflows.ActivityResult
		err error
	}
	answers := map[string]*answer{}
	var rejected error
	update := func(id string, r workflows.Request) {
		answers[id] = &answer{}
		env.UpdateWorkflow(workflows.RunUpdate, id, &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { rejected = err },
			OnComplete: func(v any, err error) {
				answers[id].err = err
				if res, ok := v.(workflows.ActivityResult); ok {
					answers[id].res = res
				}
			},
		}, r)
	}
	env.RegisterDelayedCallback(func() {
		update("compact-1", workflows.Request{Op: workflows.OpCompact, Overrides: compaction.Overrides{TargetRowsPerFragment: 1000}})
		update("cleanup-1", workflows.Request{Op: workflows.OpCleanupVersions})
		update("bad", workflows.Request{Op: "nonsense"})
	}, 0)
	env.ExecuteWorkflow(workflows.StoreMaintenance, workflows.StoreMaintenanceInput{Store: store, Pending: []workflows.Request{
		{Op: workflows.OpMergeWAL}, {Op: workflows.OpCompact},
	}})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []workflows.Op{"merge_wal", "compact", "compact", "cleanup_versions", "cleanup_versions", "cleanup_versions",
		"cleanup_versions", "cleanup_versions", "cleanup_versions"}, f.ran,
		"the update's compact runs on its own (never merged with the queued one); the failed cleanup is retried after its cooldown")
	require.NoError(t, answers["compact-1"].err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, answers["cleanup-1"].err, &app)
	require.Equal(t, workflows.ErrObjectStoreUnavailable, app.Type())
	require.ErrorContains(t, rejected, "nonsense")
}

// An attempt the server timed out (its worker stopped heartbeating) is flagged TimedOut, not
// Internal.
func TestATimedOutOperationIsFlaggedTimedOut(t *testing.T) {
	env, f := newEnv(t)
	runs := 0
	f.fail = func(op workflows.Op) error {
		if runs++; op == workflows.OpCompact && runs <= 5 {
			return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
		}
		return nil
	}
	env.ExecuteWorkflow(workflows.StoreMaintenance, workflows.StoreMaintenanceInput{Store: store, Pending: []workflows.Request{{Op: workflows.OpCompact}}})
	require.NoError(t, env.GetWorkflowError())
	require.NotEmpty(t, f.outcomes)
	require.Equal(t, workflows.ErrTimedOut, f.outcomes[0].Failure.ErrorType)
}
