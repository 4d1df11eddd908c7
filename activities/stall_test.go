package activities_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/workflows"
)

// faultyFixture is a fixture whose data directory goes through a fault-injecting store.
func faultyFixture(t *testing.T, budgetBytes int64) (*fixture, *objstoretest.Faulty) {
	var faults *objstoretest.Faulty
	f := newFixtureWith(t, budgetBytes, func(s objstore.Store) objstore.Store { faults = objstoretest.NewFaulty(s); return faults })
	return f, faults
}

func isRead(op objstoretest.Op, _ string) bool {
	return op == objstoretest.OpGet || op == objstoretest.OpGetRange
}

// A storage call that never returns inside a merge ends the attempt within the stall timeout
// (plus the grace for work deaf to its context) with a StorageStalled error; the merge memory is
// released once the call returns; the retry completes and nothing is lost.
func TestAHungStorageCallInAMergeEndsTheAttemptAsStalledAndTheRetryCompletes(t *testing.T) {
	for _, deaf := range []bool{false, true} {
		name := map[bool]string{false: "call honours its context", true: "call deaf to its context"}[deaf]
		t.Run(name, func(t *testing.T) {
			f, faults := faultyFixture(t, 64<<20)
			f.seed(t, "h", 3, 50)
			f.acts.StallTimeout = 300 * time.Millisecond
			stuck := make(chan struct{})
			rule := objstoretest.Rule{Match: isRead, Hang: !deaf}
			if deaf {
				rule.Stuck = stuck
			}
			faults.AddRule(rule)
			in := workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "h"}, Request: workflows.Request{Op: workflows.OpMergeWAL}}
			start := time.Now()
			_, err := f.env().ExecuteActivity(f.acts.MergeWAL, in)
			elapsed := time.Since(start)
			var app *temporal.ApplicationError
			require.ErrorAs(t, err, &app)
			require.Equal(t, workflows.ErrStorageStalled, app.Type(), "%v", err)
			require.False(t, app.NonRetryable())
			require.Contains(t, app.Error(), "merge_wal rollout/h")
			limit := 3 * time.Second
			if deaf {
				limit = 9 * time.Second // the stall timeout plus the grace for work deaf to its context
			}
			require.Less(t, elapsed, limit)

			faults.Reset()
			close(stuck)
			require.Eventually(t, func() bool { return f.budget.Reserved() == 0 }, 10*time.Second, 5*time.Millisecond,
				"the merge memory is released once the hung call returns")
			val, err := f.env().ExecuteActivity(f.acts.MergeWAL, in)
			require.NoError(t, err, "the retry completes")
			var res workflows.ActivityResult
			require.NoError(t, val.Get(&res))
			require.Equal(t, 3, res.GenerationsMerged)
			st, err := f.cat.GetStoreStats(context.Background(), "rollout", "h")
			require.NoError(t, err)
			require.EqualValues(t, 150, st.BaseRows, "nothing lost")
		})
	}
}

// Activities fail with stable application error types whose messages name the store and what
// happened, never a Go type name.
func TestActivityErrorsCarryStableTypes(t *testing.T) {
	f, faults := faultyFixture(t, 64<<20)
	f.seed(t, "e", 1, 10)
	in := workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "e"}, Request: workflows.Request{Op: workflows.OpMergeWAL}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&os.PathError{Op: "open", Path: "/data/x", Err: syscall.ENOSPC}, workflows.ErrObjectStoreUnavailable},
		{&os.PathError{Op: "open", Path: "/data/x", Err: syscall.EACCES}, workflows.ErrObjectStoreUnavailable},
		{errors.Join(objstore.ErrUnavailable, errors.New("connection refused")), workflows.ErrObjectStoreUnavailable},
		{errors.New("something unexpected"), workflows.ErrInternal},
	} {
		faults.Reset()
		faults.AddRule(objstoretest.Rule{Match: isRead, Err: tc.err})
		_, err := f.env().ExecuteActivity(f.acts.MergeWAL, in)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app)
		require.Equal(t, tc.want, app.Type(), "%v", err)
		require.Contains(t, app.Error(), "merge_wal rollout/e")
		require.NotContains(t, app.Error(), "*fs.PathError")
	}
	faults.Reset()
	_, err := f.env().ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "missing"}})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, workflows.ErrStoreGone, app.Type())
}
