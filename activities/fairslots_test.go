package activities_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/fairshare"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/workflows"
)

// The activities' fair slots end to end, on one slot: tenant a's merge holds it; tenant b's merge
// arriving meanwhile waits for it (store activities take a slot before they open their store);
// between two of its passes a's merge yields the slot to b, whose merge runs to its end before
// a's goes on; both merge everything.
func TestAMergeYieldsItsSlotBetweenPassesToAnotherTenant(t *testing.T) {
	var once sync.Once
	armed, gate, held := make(chan struct{}), make(chan struct{}), make(chan struct{})
	f := newFixtureWith(t, 0, func(s objstore.Store) objstore.Store {
		return &objstoretest.WriteHooks{Store: s, BeforePut: func(key string, _ []byte) func() {
			select {
			case <-armed: // after the seeding
			default:
				return nil
			}
			if strings.Contains(key, "_versions/") {
				once.Do(func() { close(held); <-gate }) // a's first table commit waits for b to queue
			}
			return nil
		}}
	})
	slots := fairshare.New(1)
	f.acts.Slots, f.acts.Tenancy = slots, catalog.DefaultTenancy
	f.acts.Merge = lsm.MergeOptions{MaxGenerations: 1}
	f.seed(t, "a.x", 3, 20)
	f.seed(t, "b.y", 1, 20)
	close(armed)

	var mu sync.Mutex
	var finished []string
	merge := func(name string, done chan<- error) {
		val, err := f.env().ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: name}})
		if err == nil {
			var res workflows.ActivityResult
			if err = val.Get(&res); err == nil && res.RowsMerged == 0 {
				err = context.DeadlineExceeded
			}
		}
		mu.Lock()
		finished = append(finished, name)
		mu.Unlock()
		done <- err
	}
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	go merge("a.x", aDone)
	<-held
	require.Equal(t, 1, slots.Running("a"))
	go merge("b.y", bDone)
	require.Eventually(t, func() bool { return slots.Waiting("b") == 1 }, 10*time.Second, time.Millisecond, "b waits for the slot")
	close(gate)
	require.NoError(t, <-bDone)
	require.NoError(t, <-aDone)
	mu.Lock()
	require.Equal(t, []string{"b.y", "a.x"}, finished, "b ran between a's passes")
	mu.Unlock()
	for name, rows := range map[string]int64{"a.x": 60, "b.y": 20} {
		st, err := f.cat.GetStoreStats(context.Background(), catalog.KindRollout, name)
		require.NoError(t, err)
		require.EqualValues(t, rows, st.BaseRows, name)
		require.Zero(t, st.PendingGenerations, name)
	}
	require.Zero(t, slots.Running("a")+slots.Running("b"), "every slot released")
}
