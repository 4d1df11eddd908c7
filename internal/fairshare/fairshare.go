// Package fairshare is a weighted fair semaphore: a fixed number of slots shared by groups
// (tenants), so that a group with many waiters gets its share, not every slot.
//
// When a slot frees, it goes to the waiting group with the least running per unit of weight
// (running/weight), ties to the group whose oldest waiter came first; within a group, first
// come, first served. A group alone uses every slot (the share is work-conserving); when groups
// compete, group g of weight w holds about w/Σw of the slots. A waiter whose context ends leaves
// the queue (a slot granted to it at that moment is passed on).
package fairshare

import (
	"context"
	"sync"
)

// Slots is the semaphore. The zero value is not usable; see New.
type Slots struct {
	capacity int

	mu      sync.Mutex // guards everything below
	seq     uint64     // arrival counter (FIFO order)
	inUse   int
	running map[string]int
	queues  map[string][]*waiter // per group, oldest first
}

type waiter struct {
	group   string
	weight  int
	arrived uint64
	ready   chan struct{} // closed when granted
	granted bool
}

// New returns capacity slots (at least 1).
func New(capacity int) *Slots {
	return &Slots{capacity: max(capacity, 1), running: map[string]int{}, queues: map[string][]*waiter{}}
}

// Acquire takes a slot for group (weight 1 and above; lower counts as 1), waiting while every
// slot is taken. It returns the release function, or ctx's error if ctx ended first.
func (s *Slots) Acquire(ctx context.Context, group string, weight int) (func(), error) {
	w := &waiter{group: group, weight: max(weight, 1), ready: make(chan struct{})}
	s.mu.Lock()
	s.seq++
	w.arrived = s.seq
	s.queues[group] = append(s.queues[group], w)
	s.dispatch()
	s.mu.Unlock()
	select {
	case <-w.ready:
		return s.releaser(group), nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.granted { // granted meanwhile: hand it on
			s.free(group)
			return nil, ctx.Err()
		}
		q := s.queues[group]
		for i, x := range q {
			if x == w {
				s.queues[group] = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(s.queues[group]) == 0 {
			delete(s.queues, group)
		}
		return nil, ctx.Err()
	}
}

func (s *Slots) releaser(group string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.free(group)
		})
	}
}

// free returns one of group's slots and grants it on. Called with mu held.
func (s *Slots) free(group string) {
	s.running[group]--
	if s.running[group] == 0 {
		delete(s.running, group)
	}
	s.inUse--
	s.dispatch()
}

// dispatch grants free slots to waiters by the fair-share rule. Called with mu held.
func (s *Slots) dispatch() {
	for s.inUse < s.capacity {
		var best *waiter
		for g, q := range s.queues {
			head := q[0]
			if best == nil || less(s.running[g], head, s.running[best.group], best) {
				best = head
			}
		}
		if best == nil {
			return
		}
		q := s.queues[best.group]
		if len(q) == 1 {
			delete(s.queues, best.group)
		} else {
			s.queues[best.group] = q[1:]
		}
		s.running[best.group]++
		s.inUse++
		best.granted = true
		close(best.ready)
	}
}

// less orders two groups' heads: fewer running per weight first (compared without division:
// ra/wa < rb/wb ⇔ ra·wb < rb·wa), then the earlier arrival.
func less(ra int, a *waiter, rb int, b *waiter) bool {
	x, y := ra*b.weight, rb*a.weight
	if x != y {
		return x < y
	}
	return a.arrived < b.arrived
}

// Running reports the slots group holds now (tests and metrics).
func (s *Slots) Running(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[group]
}

// Waiting reports how many acquirers of group wait.
func (s *Slots) Waiting(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queues[group])
}
