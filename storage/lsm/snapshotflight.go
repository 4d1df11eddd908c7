// Coalesced snapshots: reads of one store that arrive together share one listing of its shards
// and manifests instead of each making its own.
//
// A read must see every generation sealed before it began, so it may only use a snapshot whose
// listing started after it arrived. A read that finds no snapshot being taken takes one itself;
// one that finds a snapshot in progress cannot use it (that listing may predate the read) and
// joins the next one instead: the first such read waits for the running snapshot to finish, then
// takes the next for every read that joined it meanwhile. Under load a store therefore lists
// about once per listing's duration rather than once per read (on an object store, one round of
// LIST requests serves every read that arrived during the previous round); a lone read takes its
// own at once, as before.
package lsm

import (
	"context"
	"errors"
	"sync"
)

// snapshotFlight is one snapshot being taken (or taken) for the reads that share it.
type snapshotFlight struct {
	done chan struct{} // closed once snap and err are set
	snap *Snapshot
	err  error
}

// snapshotFlights coalesces a store's snapshots. The zero value is ready to use.
type snapshotFlights struct {
	mu      sync.Mutex      // guards running and next
	running *snapshotFlight // the snapshot being taken, nil when none
	next    *snapshotFlight // the one that starts once running is done, nil until a read joins it
}

// take returns a snapshot whose listing started after take was called, from load (which the
// leading read runs detached from its own cancellation: the snapshot is shared, so one caller
// giving up must not fail the others; load's storage calls have their own timeouts). The
// snapshot is shared: callers never modify it.
func (f *snapshotFlights) take(ctx context.Context, load func(context.Context) (*Snapshot, error)) (*Snapshot, error) {
	f.mu.Lock()
	if f.running == nil {
		fl := &snapshotFlight{done: make(chan struct{})}
		f.running = fl
		f.mu.Unlock()
		f.lead(ctx, fl, load)
		return fl.snap, fl.err
	}
	if fl := f.next; fl != nil { // joined: its listing has not started yet
		f.mu.Unlock()
		return fl.wait(ctx)
	}
	fl := &snapshotFlight{done: make(chan struct{})}
	f.next = fl
	prev := f.running
	f.mu.Unlock()
	<-prev.done // not ctx: the reads that join fl count on this one to take it
	f.mu.Lock()
	f.running, f.next = fl, nil
	f.mu.Unlock()
	f.lead(ctx, fl, load)
	return fl.snap, fl.err
}

// lead takes fl's snapshot and publishes it (an error if load never returns normally: the reads
// that joined fl are answered whatever happens).
func (f *snapshotFlights) lead(ctx context.Context, fl *snapshotFlight, load func(context.Context) (*Snapshot, error)) {
	fl.err = errSnapshotAbandoned
	defer func() {
		f.mu.Lock()
		if f.running == fl {
			f.running = nil
		}
		f.mu.Unlock()
		close(fl.done)
	}()
	fl.snap, fl.err = load(context.WithoutCancel(ctx))
}

var errSnapshotAbandoned = errors.New("lsm: the shared snapshot was abandoned")

// wait waits for fl's snapshot, or for ctx.
func (fl *snapshotFlight) wait(ctx context.Context) (*Snapshot, error) {
	select {
	case <-fl.done:
		return fl.snap, fl.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
