// Package deleter is a process's one owner of deleting obsolete objects: WAL entries, segments,
// generation files and shard manifests, table fragments, deletion vectors, key-index runs and
// table manifests. Deciding what is obsolete stays with the planners that know (a shard's
// garbage planner, a table's cleanup plan, the manifest edit that just made a file garbage);
// carrying it out happens here, the same way for every kind:
//
//   - paced: every delete takes a token from one process-wide rate limiter, so a cleanup of a
//     large table never floods the object store the API serves reads from;
//   - bounded: each call by CallTimeout and by the caller's context (Delete) or by the
//     deleter's own (Abandon: the caller's context may be why its attempt was abandoned);
//   - retried: a call that failed with a retryable error (objstore.Retryable) is tried again
//     (Retries times, backing off) before it counts as failed; deleting what is already gone succeeds;
//   - counted: strata_deletes_total{kind,result};
//   - waited for: Close refuses new work, lets what runs finish within CloseTimeout, then cancels
//     it and waits for every call to return.
//
// A delete that fails is never an error for the caller's operation: what is left is found again
// by the next sweep or cleanup, whose planners list storage rather than remember.
package deleter

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/strata-store/strata/storage/objstore"
)

// Kind is what an object is, the metric's kind label (a fixed set).
type Kind string

// The kinds of object a process deletes.
const (
	WALEntry       Kind = "wal_entry"
	WALSegment     Kind = "wal_segment"
	Generation     Kind = "generation"
	ShardManifest  Kind = "shard_manifest"
	Fragment       Kind = "fragment"
	DeletionVector Kind = "deletion_vector"
	IndexRun       Kind = "index_run"
	VectorIndex    Kind = "vector_index"
	TextIndex      Kind = "text_index"
	TableManifest  Kind = "table_manifest"
	PurgedStore    Kind = "purged_store" // any object of a deleted store, when the registry purges it
	Other          Kind = "other"
)

// Kinds is every Kind, in label order.
var Kinds = []Kind{WALEntry, WALSegment, Generation, ShardManifest, Fragment, DeletionVector, IndexRun, VectorIndex, TextIndex, TableManifest, PurgedStore, Other}

// The result label of strata_deletes_total.
const (
	resultDeleted = "deleted" // the object is gone (or was already)
	resultFailed  = "failed"  // every try failed: left for the next sweep or cleanup
	resultSkipped = "skipped" // not tried: the context ended or the deleter closed first
)

// ErrClosed: the deleter was closed; nothing was deleted.
var ErrClosed = errors.New("deleter: closed")

// Options configure a Deleter; the zero value takes every default.
type Options struct {
	// PerSecond paces deletes across the process (default 1000; bursts of up to a tenth of it).
	PerSecond float64
	// CallTimeout bounds each delete call, retries aside (default 30s).
	CallTimeout time.Duration
	// Retries is how many times a failed call is tried again (default 2; a negative value: none).
	Retries int
	// CloseTimeout is how long Close lets running deletes finish before it cancels them
	// (default 10s).
	CloseTimeout time.Duration
	// Metrics to count into; a private unregistered set when nil.
	Metrics *Metrics
}

// Metrics are the deleter's Prometheus collectors; one set per process.
type Metrics struct {
	deletes *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{deletes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_deletes_total",
		Help: "Deletions of obsolete objects, by kind and result (deleted, failed: left for the next sweep or cleanup, skipped: the caller's context ended or the process was closing)."},
		[]string{"kind", "result"})}
	if reg != nil {
		reg.MustRegister(m.deletes)
	}
	return m
}

// Deleter carries out deletions for every store of a process. Safe for concurrent use.
type Deleter struct {
	opts    Options
	limiter *rate.Limiter
	// ctx ends when Close gives up waiting: every call in flight is bounded by it.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.RWMutex   // guards closed; held shared while a call registers in inflight
	closed   bool           // Close was called: no new work
	inflight sync.WaitGroup // calls running (Add only under mu, before closed is set)
}

// New returns a Deleter; the process closes it after every store that uses it.
func New(opts Options) *Deleter {
	if opts.PerSecond <= 0 {
		opts.PerSecond = 1000
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 30 * time.Second
	}
	if opts.Retries < 0 {
		opts.Retries = 0
	} else if opts.Retries == 0 {
		opts.Retries = 2
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 10 * time.Second
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Deleter{opts: opts, limiter: rate.NewLimiter(rate.Limit(opts.PerSecond), max(1, int(opts.PerSecond/10))),
		ctx: ctx, cancel: cancel}
}

// shared is the deleter of handles opened without one (tests, tools): it holds no goroutine, so
// it needs no Close.
var shared = New(Options{})

// Shared is the deleter handles use when their opener passes none.
func Shared() *Deleter { return shared }

// Result is what a call deleted.
type Result struct {
	Deleted, Failed, Skipped int
	Err                      error // the first failure, or why keys were skipped
}

// Delete deletes keys of store, paced, each call bounded by the caller's context and
// CallTimeout, retried; it returns when every key is deleted, failed or skipped.
func (d *Deleter) Delete(ctx context.Context, store objstore.Store, kind Kind, keys ...string) Result {
	if len(keys) == 0 {
		return Result{}
	}
	if !d.enter() {
		d.opts.Metrics.deletes.WithLabelValues(string(kind), resultSkipped).Add(float64(len(keys)))
		return Result{Skipped: len(keys), Err: ErrClosed}
	}
	defer d.inflight.Done()
	ctx, stop := d.bound(ctx)
	defer stop()
	return d.run(ctx, store, kind, keys)
}

// Abandon deletes what an abandoned attempt wrote (files no manifest names), detached from the
// caller's context, which may have ended: each call is bounded by CallTimeout and by Close. It
// runs on the caller's goroutine and returns when done.
func (d *Deleter) Abandon(store objstore.Store, kind Kind, keys ...string) Result {
	return d.Delete(context.Background(), store, kind, keys...)
}

// enter registers a call; false once the deleter is closed.
func (d *Deleter) enter() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return false
	}
	d.inflight.Add(1)
	return true
}

// bound is ctx, also ended when Close gives up waiting.
func (d *Deleter) bound(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(d.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (d *Deleter) run(ctx context.Context, store objstore.Store, kind Kind, keys []string) Result {
	var res Result
	counter := d.opts.Metrics.deletes
	for i, key := range keys {
		if err := d.limiter.Wait(ctx); err != nil {
			res.Skipped += len(keys) - i
			counter.WithLabelValues(string(kind), resultSkipped).Add(float64(len(keys) - i))
			if res.Err == nil {
				res.Err = context.Cause(ctx)
			}
			return res
		}
		if err := d.deleteOne(ctx, store, key); err != nil {
			res.Failed++
			counter.WithLabelValues(string(kind), resultFailed).Inc()
			if res.Err == nil {
				res.Err = err
			}
			continue
		}
		res.Deleted++
		counter.WithLabelValues(string(kind), resultDeleted).Inc()
	}
	return res
}

// deleteOne deletes key, retrying a call that failed with a retryable error after a pause
// (50 ms, doubling).
func (d *Deleter) deleteOne(ctx context.Context, store objstore.Store, key string) error {
	pause := 50 * time.Millisecond
	for try := 0; ; try++ {
		callCtx, cancel := context.WithTimeout(ctx, d.opts.CallTimeout)
		err := store.Delete(callCtx, key)
		cancel()
		if err == nil || errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		if try >= d.opts.Retries || ctx.Err() != nil || !objstore.Retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// Close refuses new deletions, lets the running ones finish within CloseTimeout, then cancels
// them, and returns once every call has returned. What was not deleted is found again by the
// next sweep or cleanup.
func (d *Deleter) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d.opts.CloseTimeout):
		d.cancel()
		<-done
	}
	d.cancel()
}
