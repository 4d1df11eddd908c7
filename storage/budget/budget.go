// Package budget is the process-wide merge memory budget: a byte semaphore every WAL merge
// reserves from before reading anything, so the number of concurrent merges a process runs is
// bounded by bytes, not by how many callers ask (unbounded concurrent merges, each holding its
// rows in memory, are how a worker runs out of memory).
//
// Rules:
//   - A reservation takes everything it needs in ONE acquire (no partial holds while waiting), so
//     reservations cannot deadlock each other.
//   - A request larger than the whole budget takes the whole budget: it is admitted once it is the
//     only holder.
//   - Waiting never fails on its own; it ends when the bytes are free or the context is done.
//   - Release is idempotent and must be called on every path (success, failure, cancellation).
package budget

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
)

// Budget is a byte budget shared by every merge in a process.
type Budget struct {
	capacity int64 // 0 = unlimited
	sem      *semaphore.Weighted
	reserved atomic.Int64
	waiters  atomic.Int64
	metrics  *Metrics
}

// Metrics are the budget's Prometheus collectors.
type Metrics struct {
	reserved prometheus.GaugeFunc
	waiting  prometheus.GaugeFunc
	waitTime prometheus.Histogram
}

// New returns a budget of capacity bytes (0 disables the limit) whose metrics are registered
// with reg when it is not nil.
func New(capacity int64, reg prometheus.Registerer) *Budget {
	b := &Budget{capacity: max(capacity, 0)}
	if b.capacity > 0 {
		b.sem = semaphore.NewWeighted(b.capacity)
	}
	b.metrics = &Metrics{
		reserved: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_merge_budget_reserved_bytes", Help: "Bytes of the merge memory budget currently reserved.",
		}, func() float64 { return float64(b.reserved.Load()) }),
		waiting: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_merge_budget_waiters", Help: "Merges waiting for merge memory budget.",
		}, func() float64 { return float64(b.waiters.Load()) }),
		waitTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "strata_merge_budget_wait_seconds", Help: "Time merges waited for merge memory budget.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
	}
	if reg != nil {
		reg.MustRegister(b.metrics.reserved, b.metrics.waiting, b.metrics.waitTime)
	}
	return b
}

// Capacity is the budget in bytes (0 = unlimited).
func (b *Budget) Capacity() int64 { return b.capacity }

// Reserved is how many bytes are reserved now.
func (b *Budget) Reserved() int64 { return b.reserved.Load() }

// Waiters is how many reservations are waiting now.
func (b *Budget) Waiters() int64 { return b.waiters.Load() }

// Reservation is bytes held from a Budget.
type Reservation struct {
	b    *Budget
	mu   sync.Mutex // guards held and bytes
	held int64      // permits held from the semaphore (<= capacity)
	want int64      // bytes asked for (may exceed capacity)
}

// permits is what a request of n bytes holds: at most the whole budget.
func (b *Budget) permits(n int64) int64 {
	if b.capacity == 0 {
		return 0
	}
	return min(max(n, 0), b.capacity)
}

func (b *Budget) acquire(ctx context.Context, permits int64) error {
	if permits == 0 {
		return ctx.Err()
	}
	if b.sem.TryAcquire(permits) {
		return nil
	}
	b.waiters.Add(1)
	start := time.Now()
	err := b.sem.Acquire(ctx, permits)
	b.waiters.Add(-1)
	b.metrics.waitTime.Observe(time.Since(start).Seconds())
	return err
}

// Reserve takes n bytes (the whole budget when n exceeds it), waiting until they are free or ctx
// is done.
func (b *Budget) Reserve(ctx context.Context, n int64) (*Reservation, error) {
	p := b.permits(n)
	if err := b.acquire(ctx, p); err != nil {
		return nil, err
	}
	b.reserved.Add(p)
	return &Reservation{b: b, held: p, want: n}, nil
}

// Bytes is the reservation's current size as asked for (it may exceed the capacity).
func (r *Reservation) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.want
}

// Release gives the bytes back. It is safe to call more than once.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b.release(r.held)
	r.held, r.want = 0, 0
}

func (b *Budget) release(permits int64) {
	if permits == 0 {
		return
	}
	b.reserved.Add(-permits)
	b.sem.Release(permits)
}
