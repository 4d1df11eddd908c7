// Heartbeats driven by progress, and the watchdog that ends an activity stuck in a call that
// never returns.
//
// An activity's work runs with a context carrying an objstore.Progress; every storage call that
// finishes counts in it, and so does every phase the activity reports (a merge's phases, rows
// merged). On each tick the heartbeater compares what it sees with the previous tick:
//   - progress moved, or the activity is waiting for merge memory or for a fair-share slot
//     (waits with an owner that ends): heartbeat, with details a person reads in the UI;
//   - nothing moved for StallTimeout: the attempt is stalled. The heartbeater stops heartbeating
//     and cancels the work's context with errStalled; the activity returns a StorageStalled error
//     (retried, possibly on another worker) as soon as the work returns, or after abandonGrace
//     when the work is deaf to its context (a syscall blocked in a hung disk): the work's
//     goroutine is then left to finish on its own, releasing the store and its merge memory
//     when it does. Should this process be frozen as a whole, the server's HeartbeatTimeout
//     ends the attempt instead.
package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/strata-store/strata/internal/fairshare"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
)

// errStalled is the cause of a work context cancelled by the watchdog.
var errStalled = errors.New("no storage call finished and no phase advanced within the stall timeout (a storage call hung)")

// abandonGrace is how long a stalled activity waits for its cancelled work to return before it
// reports the failure anyway.
const abandonGrace = 5 * time.Second

// HeartbeatDetails are recorded with every heartbeat (visible in the UI's pending activity).
type HeartbeatDetails struct {
	Phase            Phase  `json:"phase"`
	Store            string `json:"store,omitempty"` // the store a registry step works on
	Shard            string `json:"shard,omitempty"`
	ReservedBytes    int64  `json:"reserved_bytes"`
	WaitingForBudget bool   `json:"waiting_for_budget"`
	// WaitingForSlot: the activity waits for a maintenance slot by its tenant's fair share.
	WaitingForSlot  bool  `json:"waiting_for_slot,omitempty"`
	GenerationsRead int   `json:"generations_read"`
	RowsMerged      int64 `json:"rows_merged"`
	// Search index builds (context stores): fragments indexed of those to index in the current
	// phase (indexing_vectors, then indexing_text), vectors and text documents indexed.
	FragmentsIndexed int   `json:"fragments_indexed,omitempty"`
	FragmentsToIndex int   `json:"fragments_to_index,omitempty"`
	VectorsIndexed   int64 `json:"vectors_indexed,omitempty"`
	DocumentsIndexed int64 `json:"documents_indexed,omitempty"`
	BuildTicks       int64 `json:"build_ticks,omitempty"` // CPU-bound build steps done (k-means iterations, rows assigned)
	StorageCalls     int64 `json:"storage_calls"`
	StorageBytes     int64 `json:"storage_bytes"`
}

// apply takes a store job's progress (phase, shard, memory held) into the details; counts that
// add up across passes are the caller's.
func (d *HeartbeatDetails) apply(p lsm.Progress) {
	d.Phase, d.ReservedBytes, d.WaitingForBudget = Phase(p.Phase), p.ReservedBytes, p.WaitingForBudget()
	if p.Shard != "" {
		d.Shard = p.Shard
	}
}

// heartbeater records progress-driven heartbeats until stopped, and cancels the work when it
// stalls (see the file comment).
type heartbeater struct {
	ctx      context.Context // the activity's context: heartbeats are recorded with it
	progress *objstore.Progress
	stall    time.Duration
	cancel   context.CancelCauseFunc // cancels the work's context

	mu      sync.Mutex // guards details and marks
	details HeartbeatDetails
	marks   int64 // phase changes and other progress the activity reports itself

	// slot is the fair-share slot the activity holds (nil without one); set before the work
	// starts and used by the work's goroutine only.
	slot *fairshare.Lease

	stalled chan struct{} // closed when the watchdog gave up on the work
	stop    chan struct{}
	done    chan struct{}
}

// startHeartbeats starts the heartbeater of an activity whose work runs with the returned context.
func (a *Activities) startHeartbeats(ctx context.Context, phase Phase) (*heartbeater, context.Context) {
	interval := a.HeartbeatInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	stall := a.StallTimeout
	if stall <= 0 {
		stall = DefaultStallTimeout
	}
	h := &heartbeater{ctx: ctx, progress: &objstore.Progress{}, stall: stall, details: HeartbeatDetails{Phase: phase},
		stalled: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	work, cancel := context.WithCancelCause(objstore.ContextWithProgress(ctx, h.progress))
	h.cancel = cancel
	activity.RecordHeartbeat(ctx, h.snapshot())
	go h.run(interval)
	return h, work
}

func (h *heartbeater) run(interval time.Duration) {
	defer close(h.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	last, lastMove := h.fingerprint(), time.Now()
	for {
		select {
		case <-h.stop:
			return
		case <-h.ctx.Done():
			return
		case now := <-t.C:
			fp := h.fingerprint()
			if d := h.snapshot(); fp != last || d.WaitingForBudget || d.WaitingForSlot {
				last, lastMove = fp, now
			}
			if now.Sub(lastMove) >= h.stall {
				close(h.stalled)
				h.cancel(errStalled)
				return
			}
			activity.RecordHeartbeat(h.ctx, h.snapshot())
		}
	}
}

type fingerprint struct{ calls, bytes, marks int64 }

func (h *heartbeater) fingerprint() fingerprint {
	calls, bytes := h.progress.Counts()
	h.mu.Lock()
	defer h.mu.Unlock()
	return fingerprint{calls, bytes, h.marks}
}

func (h *heartbeater) snapshot() HeartbeatDetails {
	h.mu.Lock()
	d := h.details
	h.mu.Unlock()
	d.StorageCalls, d.StorageBytes = h.progress.Counts()
	return d
}

// set updates the details and counts as progress; a new phase is recorded at once (not at the
// next tick), so the UI never shows a phase the activity has left.
func (h *heartbeater) set(f func(*HeartbeatDetails)) {
	h.mu.Lock()
	before := h.details
	f(&h.details)
	changed := h.details != before
	phaseChanged := h.details.Phase != before.Phase
	if changed {
		h.marks++
	}
	h.mu.Unlock()
	select {
	case <-h.stalled: // abandoned: the activity has reported its failure already
		return
	default:
	}
	if phaseChanged {
		activity.RecordHeartbeat(h.ctx, h.snapshot())
	}
}

// close stops the heartbeater (the work has returned or been abandoned).
func (h *heartbeater) close() {
	close(h.stop)
	<-h.done
	h.cancel(nil)
}
