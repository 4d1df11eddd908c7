package fairshare

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// grants starts n acquirers of group in order and returns a channel that receives the group's
// name and release function as each is granted.
type grant struct {
	group   string
	release func()
}

func enqueue(t *testing.T, s *Slots, out chan<- grant, group string, weight, n int, wg *sync.WaitGroup) {
	for range n {
		before := s.Waiting(group) + s.Running(group)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := s.Acquire(context.Background(), group, weight)
			if err != nil {
				t.Error(err)
				return
			}
			out <- grant{group, lease.Release}
		}()
		// Wait until it is queued or granted, so arrival order is the loop's.
		require.Eventually(t, func() bool { return s.Waiting(group)+s.Running(group) > before }, time.Second, 100*time.Microsecond)
	}
}

// With the slots full of a flooding group, every freed slot alternates between the groups
// waiting (equal weights) instead of going to the flood's queue in arrival order.
func TestFreedSlotsAreSharedAcrossGroups(t *testing.T) {
	s := New(2)
	out := make(chan grant, 100)
	var wg sync.WaitGroup
	enqueue(t, s, out, "flood", 1, 2, &wg)
	held := []grant{<-out, <-out}
	enqueue(t, s, out, "flood", 1, 6, &wg)
	enqueue(t, s, out, "quiet", 1, 2, &wg)
	var order []string
	for range 8 {
		held[0].release()
		g := <-out
		order = append(order, g.group)
		held = append(held[1:], g)
	}
	for _, g := range held {
		g.release()
	}
	wg.Wait()
	// Two flood slots held: the quiet group gets the first freed slot, then one of every two
	// while it waits, then the flood the rest.
	require.Equal(t, []string{"quiet", "flood", "quiet", "flood", "flood", "flood", "flood", "flood"}, order)
}

// Weights: a group of weight 3 holds three slots for every one of a group of weight 1.
func TestWeightedShares(t *testing.T) {
	s := New(4)
	out := make(chan grant, 200)
	var wg sync.WaitGroup
	enqueue(t, s, out, "a", 1, 80, &wg) // more waiters than the run below grants
	enqueue(t, s, out, "b", 3, 80, &wg)
	// Four slots went to a (alone when they were free); from here on each freed slot is
	// re-granted by share. Count the holders over a long run.
	held := []grant{<-out, <-out, <-out, <-out}
	count := map[string]int{}
	for i := range 68 {
		held[0].release()
		g := <-out
		held = append(held[1:], g)
		if i < 8 { // until the first holders have been replaced
			continue
		}
		for _, h := range held {
			count[h.group]++
		}
	}
	for _, g := range held {
		g.release()
	}
	drained := make(chan struct{})
	go func() { // the remaining waiters are granted one by one as each releases
		defer close(drained)
		for g := range out {
			g.release()
		}
	}()
	wg.Wait()
	close(out)
	<-drained
	share := float64(count["b"]) / float64(count["a"]+count["b"])
	require.InDelta(t, 0.75, share, 0.03, "holdings %v", count)
}

// A waiter whose context ends leaves the queue; nothing leaks and the slot count stays right.
func TestCancelledWaiters(t *testing.T) {
	s := New(1)
	lease, err := s.Acquire(context.Background(), "a", 1)
	require.NoError(t, err)
	release := lease.Release
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(ctx, "b", 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, s.Waiting("b"))
	release()
	release() // idempotent
	r2, err := s.Acquire(context.Background(), "c", 1)
	require.NoError(t, err)
	r2.Release()
	require.Zero(t, s.Running("a"))
}

// Many goroutines acquiring and releasing at random never hold more than the capacity, and every
// acquirer is served.
func TestConcurrentUseStaysWithinCapacity(t *testing.T) {
	s := New(3)
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for range 200 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3))*time.Millisecond)
				lease, err := s.Acquire(ctx, fmt.Sprint("g", rng.IntN(4)), 1+rng.IntN(3))
				cancel()
				if err != nil {
					continue
				}
				if rng.IntN(3) == 0 { // long work yields between its steps
					yctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3))*time.Millisecond)
					err := lease.Yield(yctx)
					cancel()
					if err != nil {
						continue
					}
				}
				n := inUse.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
				inUse.Add(-1)
				lease.Release()
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(3))
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Zero(t, s.inUse)
	require.Empty(t, s.queues)
	require.Empty(t, s.running)
}

// A group holding every slot gives one up at its next yield to another group's waiter, and keeps
// it when only its own group waits.
func TestYieldHandsTheSlotToAnotherGroup(t *testing.T) {
	s := New(1)
	lease, err := s.Acquire(context.Background(), "flood", 1)
	require.NoError(t, err)
	out := make(chan grant, 4)
	var wg sync.WaitGroup
	enqueue(t, s, out, "flood", 1, 1, &wg)
	require.NoError(t, lease.Yield(context.Background()), "only its own group waits: kept")
	require.Equal(t, 1, s.Running("flood"))
	enqueue(t, s, out, "quiet", 1, 1, &wg)
	yielded := make(chan error, 1)
	go func() { yielded <- lease.Yield(context.Background()) }()
	g := <-out
	require.Equal(t, "quiet", g.group, "the quiet group's waiter goes first")
	g.release()
	g = <-out
	require.Equal(t, "flood", g.group, "then the flood's older waiter")
	g.release()
	require.NoError(t, <-yielded)
	lease.Release()
	wg.Wait()
	require.Zero(t, s.Running("flood"))
}
