package budget

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"
)

const MiB = 1 << 20

func TestReservationsReleaseAndAreIdempotent(t *testing.T) {
	b := New(10*MiB, nil)
	r, err := b.Reserve(context.Background(), 4*MiB)
	require.NoError(t, err)
	require.EqualValues(t, 4*MiB, b.Reserved())
	r.Release()
	r.Release()
	require.Zero(t, b.Reserved())
}

func TestAnExhaustedBudgetMakesTheNextMergeWait(t *testing.T) {
	b := New(10*MiB, nil)
	first, err := b.Reserve(context.Background(), 8*MiB)
	require.NoError(t, err)
	got := make(chan *Reservation)
	go func() {
		r, err := b.Reserve(context.Background(), 4*MiB)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	require.Eventually(t, func() bool { return b.Waiters() == 1 }, time.Second, time.Millisecond)
	select {
	case <-got:
		t.Fatal("admitted beyond the budget")
	case <-time.After(30 * time.Millisecond):
	}
	first.Release()
	second := <-got
	require.EqualValues(t, 4*MiB, b.Reserved())
	second.Release()
}

func TestWaitsHonourTheContext(t *testing.T) {
	b := New(MiB, nil)
	hold, _ := b.Reserve(context.Background(), MiB)
	defer hold.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := b.Reserve(ctx, MiB)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, b.Waiters())
	require.EqualValues(t, MiB, b.Reserved(), "a failed wait holds nothing")
}

func TestAnOversizedRequestTakesTheWholeBudgetAndProceedsAlone(t *testing.T) {
	b := New(10*MiB, nil)
	small, _ := b.Reserve(context.Background(), MiB)
	done := make(chan *Reservation)
	go func() {
		r, _ := b.Reserve(context.Background(), 50*MiB)
		done <- r
	}()
	select {
	case <-done:
		t.Fatal("the oversized request ran alongside another holder")
	case <-time.After(30 * time.Millisecond):
	}
	small.Release()
	big := <-done
	require.EqualValues(t, 50*MiB, big.Bytes())
	require.EqualValues(t, 10*MiB, b.Reserved())
	big.Release()
	require.Zero(t, b.Reserved())
}

func TestGrowToWaitsForTheExtraAndIsIdempotentDownward(t *testing.T) {
	b := New(10*MiB, nil)
	r, _ := b.Reserve(context.Background(), 4*MiB)
	other, _ := b.Reserve(context.Background(), 4*MiB)
	require.NoError(t, r.GrowTo(context.Background(), 2*MiB))
	require.EqualValues(t, 4*MiB, r.Bytes())

	grown := make(chan error)
	go func() { grown <- r.GrowTo(context.Background(), 9*MiB) }()
	select {
	case <-grown:
		t.Fatal("grew past the budget")
	case <-time.After(30 * time.Millisecond):
	}
	// While waiting to grow, r holds nothing, so two growing merges cannot deadlock.
	require.EqualValues(t, 4*MiB, b.Reserved())
	other.Release()
	require.NoError(t, <-grown)
	require.EqualValues(t, 9*MiB, b.Reserved())
	r.Release()
	require.Zero(t, b.Reserved())
}

func TestTwoGrowingMergesDoNotDeadlock(t *testing.T) {
	b := New(10*MiB, nil)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.Reserve(context.Background(), 5*MiB)
			if err != nil {
				t.Error(err)
				return
			}
			defer r.Release()
			if err := r.GrowTo(context.Background(), 8*MiB); err != nil {
				t.Error(err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("deadlock")
	}
	require.Zero(t, b.Reserved())
}

func TestConcurrentReservationsNeverExceedTheBudget(t *testing.T) {
	b := New(16*MiB, nil)
	var peak, cur atomic.Int64
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(1+i%6) * MiB
			r, err := b.Reserve(context.Background(), n)
			if err != nil {
				t.Error(err)
				return
			}
			c := cur.Add(n)
			for {
				p := peak.Load()
				if c <= p || peak.CompareAndSwap(p, c) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			cur.Add(-n)
			r.Release()
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(16*MiB))
	require.Zero(t, b.Reserved())
}

func TestZeroCapacityIsUnlimited(t *testing.T) {
	b := New(0, nil)
	r, err := b.Reserve(context.Background(), 1<<40)
	require.NoError(t, err)
	require.NoError(t, r.GrowTo(context.Background(), 1<<41))
	r.Release()
}

func TestMetricsPassPromlint(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := New(MiB, reg)
	r, _ := b.Reserve(context.Background(), MiB/2)
	defer r.Release()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Len(t, mfs, 3)
}
