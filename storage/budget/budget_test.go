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
	require.EqualValues(t, 1<<40, r.Bytes())
	require.Zero(t, b.Reserved(), "an unlimited budget accounts nothing")
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
