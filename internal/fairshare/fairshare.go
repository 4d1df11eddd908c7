// Package fairshare is a weighted fair semaphore: a fixed number of slots shared by groups
// (tenants), so that a group with many waiters gets its share, not every slot.
//
// When a slot frees, it goes to the waiting group with the least running per unit of weight
// (running/weight), ties to the group served longest ago (round robin), then to the group whose
// oldest waiter came first; within a group, first come, first served. A group alone uses every slot (the share is work-conserving); when groups
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
	seq     uint64     // arrival and grant counter
	inUse   int
	running map[string]int
	served  map[string]uint64    // per group, when it was last granted a slot (seq)
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
	return &Slots{capacity: max(capacity, 1), running: map[string]int{}, served: map[string]uint64{}, queues: map[string][]*waiter{}}
}

// Lease is a slot held by a group; Release returns it (once; later calls do nothing).
type Lease struct {
	s       *Slots
	group   string
	weight  int
	release func()
}

// Release returns the slot.
func (l *Lease) Release() { l.release() }

// Yield hands the slot to a waiter of another group that the fair-share rule puts first, if any,
// and waits (in line again) for a slot; otherwise it keeps the slot. Long work calls it between
// its steps, so a group that holds every slot gives them up one step at a time to a group that
// arrives later. On ctx's end while waiting, the lease holds nothing and ctx's error returns.
func (l *Lease) Yield(ctx context.Context) error {
	s := l.s
	s.mu.Lock()
	s.running[l.group]-- // as if free: whom would it go to?
	next := s.head()
	s.running[l.group]++
	s.mu.Unlock()
	if next == nil || next.group == l.group {
		return nil
	}
	l.release()
	again, err := s.Acquire(ctx, l.group, l.weight)
	if err != nil {
		l.release = func() {}
		return err
	}
	l.release = again.release
	return nil
}

// Acquire takes a slot for group (weight 1 and above; lower counts as 1), waiting while every
// slot is taken. It returns the lease, or ctx's error if ctx ended first.
func (s *Slots) Acquire(ctx context.Context, group string, weight int) (*Lease, error) {
	w := &waiter{group: group, weight: max(weight, 1), ready: make(chan struct{})}
	s.mu.Lock()
	s.seq++
	w.arrived = s.seq
	s.queues[group] = append(s.queues[group], w)
	s.dispatch()
	s.mu.Unlock()
	select {
	case <-w.ready:
		return &Lease{s: s, group: group, weight: w.weight, release: s.releaser(group)}, nil
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
		if len(s.queues[group]) == 0 {
			delete(s.served, group) // idle: nothing to remember (the map stays bounded)
		}
	}
	s.inUse--
	s.dispatch()
}

// head is the waiter the fair-share rule serves next (nil when none waits). Called with mu held.
func (s *Slots) head() *waiter {
	var best *waiter
	for g, q := range s.queues {
		if first := q[0]; best == nil || s.less(g, first, best) {
			best = first
		}
	}
	return best
}

// dispatch grants free slots to waiters by the fair-share rule. Called with mu held.
func (s *Slots) dispatch() {
	for s.inUse < s.capacity {
		best := s.head()
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
		s.seq++
		s.served[best.group] = s.seq
		best.granted = true
		close(best.ready)
	}
}

// less orders two groups' heads (a of group ga): fewer running per weight first (compared
// without division: ra/wa < rb/wb ⇔ ra·wb < rb·wa), then the group served longer ago (round
// robin among equals), then the earlier arrival. Called with mu held.
func (s *Slots) less(ga string, a, b *waiter) bool {
	ra, rb := s.running[ga], s.running[b.group]
	if x, y := ra*b.weight, rb*a.weight; x != y {
		return x < y
	}
	if sa, sb := s.served[ga], s.served[b.group]; sa != sb {
		return sa < sb
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
