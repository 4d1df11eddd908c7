// The shard writer: one per (store, process), owning the process's shard of the store.
//
// Locking: mu guards the active memtable, the frozen list, the append queue, the retired
// segments and the fenced state; it is held only for in-memory work, never across I/O. sealMu
// serialises seals, so generations are added to the shard manifest in order; appends never wait
// for it. A single committer goroutine takes groups and reserves their WAL positions in order;
// up to CommitsInFlight of them are written at once, but each reserves its place in the WAL
// segment only after the previous one did, and enters the memtable only after the previous one
// did (two chains of channels), so segments and memtables hold positions in order.
//
// Where a group goes: when the object store writes in place (a local filesystem), the writer
// appends each group as a frame to its current WAL segment and syncs it (segmentwriter.go);
// otherwise each group is a WAL entry object created with put-if-absent.
//
// (How a writer takes a shard over and fences the previous one: claim.go.)
package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

// WriterOptions tune a shard writer.
type WriterOptions struct {
	// GroupCommitWindow bounds how long the committer waits to gather appends (default 2ms): after
	// a wake-up until GroupCommitBytes are queued, and between back-to-back groups until as many
	// bytes as the previous group carried are queued.
	GroupCommitWindow time.Duration
	GroupCommitBytes  int64 // the most the committer waits for before writing (default 4 MiB)
	// CommitsInFlight bounds the group commits being written at once (default 2 on a disk, where a
	// group is gathered and encoded while the previous one syncs; 8 on object stores, where each
	// group is an independent PUT).
	CommitsInFlight int
	SealRows        int64 // seal when the memtable holds this many rows (default 100,000)
	SealBytes       int64 // ... or this many bytes (default 64 MiB)
	// SegmentBytes: a WAL segment takes no more frames once this size is reached (default
	// 64 MiB; a single larger group still gets a segment of its own).
	SegmentBytes int64
	// EntryObjects makes the writer create one WAL entry object per group commit even when the
	// object store can write in place (the layout for stores that cannot, e.g. S3).
	EntryObjects bool
}

// withDefaults fills the unset options; segments says whether groups go to WAL segments (a disk)
// or to entry objects (an object store, where each group is one PUT of a few milliseconds or
// more: more groups in flight keep concurrent appenders from queueing behind one another).
func (o WriterOptions) withDefaults(segments bool) WriterOptions {
	if o.CommitsInFlight <= 0 && !segments {
		o.CommitsInFlight = objectStoreCommitsInFlight
	}
	if o.GroupCommitWindow <= 0 {
		o.GroupCommitWindow = 2 * time.Millisecond
	}
	if o.GroupCommitBytes <= 0 {
		o.GroupCommitBytes = 4 << 20
	}
	if o.CommitsInFlight <= 0 {
		o.CommitsInFlight = 2
	}
	if o.SealRows <= 0 {
		o.SealRows = 100_000
	}
	if o.SealBytes <= 0 {
		o.SealBytes = 64 << 20
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 64 << 20
	}
	return o
}

// objectStoreCommitsInFlight is the default CommitsInFlight when groups are entry objects.
const objectStoreCommitsInFlight = 8

type pendingAppend struct {
	rec     arrow.RecordBatch
	encoded *entryData // rec as a WAL entry of its own (gatherEntry), made by the appender
	bytes   int64
	done    chan error
}

// Writer owns one shard of a store in this process.
type Writer struct {
	a        *Access
	cfg      Config
	shard    string
	epoch    uint64
	opts     WriterOptions
	segments bool // groups go to WAL segments (the store writes in place)
	// uncheckedWindow is what the claim promised in the manifest (UncheckedWindow): with groups
	// written as entry objects, a group is acknowledged without re-reading the manifest when the
	// groups at the uncheckedWindow positions below it were all written (0: always re-read).
	uncheckedWindow uint64
	seg             *activeSegment // the segment being appended to; only the reservation token's holder touches it

	mu      sync.Mutex // guards the fields below
	active  *memtable
	frozen  []*memtable // oldest first; immutable
	queue   []*pendingAppend
	queued  int64
	fenced  error
	closed  bool
	nextPos uint64
	// lastFailed is the highest position whose group failed (0: none since the claim); set before
	// the group's commit slot is released, so a later group sees every failure below it.
	lastFailed uint64
	retired    []SegmentRef // segments moved past, for the next seal to list in the manifest
	// liveSegments names the segments this writer created that no seal has listed yet (active,
	// being retired, retired): the garbage planner never deletes them. A name enters before its
	// segment is created and leaves once a committed seal lists it.
	liveSegments map[string]bool

	wake    chan struct{} // nudges the committer; never closed
	quit    chan struct{} // closed by close()
	stopped chan struct{} // closed when the committer exits
	sealMu  sync.Mutex    // serialises seals
	sealing atomic.Bool
	// drained is set by Close once the committer has stopped: no entry will be written again, so
	// the seals from then on withdraw the claim's promise (UncheckedWindow) and the next claim
	// needs one fence, not a window of them.
	drained atomic.Bool
	// rollBelow asks frame reservations for a new segment while the active one starts below it:
	// each seal that made a generation raises it past its memtable's last position, so a segment
	// holds the rows of few generations and goes once they are merged. A segment that starts
	// after the sealed rows (a size roll came first) holds none of them and is kept.
	rollBelow atomic.Uint64
	pending   atomic.Int64   // sealed generations pending merge, as of the last manifest read
	gc        *collector     // carries out every WAL deletion of this writer; stopped by close
	bg        sync.WaitGroup // segment retirements and size-triggered seals; close waits for them
}

// Enqueue hands a stamped record (laid out as the table schema, with _seq and _tombstone) to the
// committer and waits until it is durable. The record is encoded here, by the appender, while
// earlier groups are being written: the committer then only splices the appends' encodings into
// the group's entry (see groupEntry).
func (w *Writer) Enqueue(ctx context.Context, rec arrow.RecordBatch) error {
	var size int64
	for _, c := range rec.Columns() {
		size += int64(c.Data().SizeInBytes())
	}
	encoded, err := gatherEntry(rec, w.a.Allocator)
	if err != nil {
		return err
	}
	p := &pendingAppend{rec: rec, encoded: encoded, bytes: size, done: make(chan error, 1)}
	w.mu.Lock()
	switch fenced := w.fenced; {
	case fenced != nil:
		w.mu.Unlock()
		encoded.release()
		return fenced
	case w.closed:
		w.mu.Unlock()
		encoded.release()
		return ErrClosed
	}
	rec.Retain()
	w.queue = append(w.queue, p)
	w.queued += size
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		// The entry may still become durable; the caller cannot know, as with any timeout.
		return ctx.Err()
	}
}

// groupCommitter is the writer's one committer goroutine: it gathers queued appends into groups
// and writes each group as one WAL entry. Up to CommitsInFlight groups are written concurrently
// (each at its own position, reserved when the group is taken), but they enter the memtable and
// are acknowledged strictly in position order: a seal then never covers a position whose rows
// are still on their way to the memtable.
func (w *Writer) groupCommitter() {
	defer close(w.stopped)
	slots := make(chan struct{}, w.opts.CommitsInFlight)
	prev := make(chan struct{}) // closed when the previous group is in the memtable (or failed)
	close(prev)
	prevReserved := make(chan struct{}) // closed when the previous group has its place in the WAL
	close(prevReserved)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	// dispatch writes g in the background once a slot is free; the next group waits for it.
	dispatch := func(g *commitGroup) {
		done, reserved := make(chan struct{}), make(chan struct{})
		inflight.Add(1)
		go func(prev, prevReserved chan struct{}) {
			defer inflight.Done()
			defer func() { <-slots }()
			defer close(done)
			w.commit(g, prevReserved, reserved, prev)
		}(prev, prevReserved)
		prev, prevReserved = done, reserved
	}
	for {
		select {
		case <-w.wake:
		case <-w.quit:
			for {
				slots <- struct{}{}
				g := w.takeGroup()
				if g == nil {
					<-slots
					return
				}
				dispatch(g)
			}
		}
		last := int64(0)
		for {
			slots <- struct{}{}
			// Gather: wait (up to the window) until as many bytes are queued as the last group
			// carried, or GroupCommitBytes: under a steady load the next group is as large as the
			// last one instead of splitting into half-size groups that each pay a sync.
			target := w.opts.GroupCommitBytes
			if last > 0 {
				target = min(target, last)
			}
			w.gather(target)
			g := w.takeGroup()
			if g == nil {
				<-slots
				break
			}
			last = g.bytes
			dispatch(g)
		}
	}
}

// gather waits until target bytes are queued or the group commit window has passed, whichever
// comes first; every enqueue wakes it to check (no polling).
func (w *Writer) gather(target int64) {
	timer := time.NewTimer(w.opts.GroupCommitWindow)
	defer timer.Stop()
	for {
		w.mu.Lock()
		queued := w.queued
		w.mu.Unlock()
		if queued >= target {
			return
		}
		select {
		case <-w.wake:
		case <-timer.C:
			return
		case <-w.quit:
			return
		}
	}
}

// commitGroup is one group commit: the appends it acknowledges and its reserved WAL position.
type commitGroup struct {
	appends []*pendingAppend
	bytes   int64
	pos     uint64
	fenced  error // the writer was already fenced when the group was taken
}

// takeGroup empties the queue into a group and reserves the next WAL position for it (nil when
// the queue is empty). A group whose write fails leaves its position unused: replay and entry
// deletion only ever look at the objects that exist.
func (w *Writer) takeGroup() *commitGroup {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return nil
	}
	g := &commitGroup{appends: w.queue, bytes: w.queued, pos: w.nextPos, fenced: w.fenced}
	w.queue, w.queued = nil, 0
	w.nextPos++
	return g
}

// commit writes g's entry (a frame of the WAL segment, or an entry object), confirms the epoch
// where it must, then (once the previous group is done) puts the rows in the memtable and
// acknowledges the appends. A frame's place in the segment is reserved after the previous
// group's (prevReserved; commit closes reserved once it has its own or needs none), so frames lie
// in position order. Groups finish in position order (each waits for prev), so a group's commit
// slot is released only after every lower position's group is done: at most CommitsInFlight
// consecutive positions are ever being written.
//
// Fencing: a frame is acknowledged only if the shard manifest, read after the write, still shows
// our epoch. A claimer bumps the epoch BEFORE it lists the entries and scans the segments to
// replay, so a group written when we read our epoch is found and replayed; if the epoch moved,
// the group is not acknowledged (it may or may not be replayed, like any unacknowledged write).
// An entry object needs no such read when the groups at the uncheckedWindow positions below it
// were all written: the claimer's fences cover every position it could have been written at
// without being found (claim.go). After a failed group, the next uncheckedWindow groups read the
// manifest. An entry object whose position is taken means a fence is there: the manifest then
// shows the new epoch.
func (w *Writer) commit(g *commitGroup, prevReserved <-chan struct{}, reserved chan<- struct{}, prev <-chan struct{}) {
	finish := func(err error) {
		for _, p := range g.appends {
			p.rec.Release()
			p.done <- err
		}
	}
	recs, data, err := w.groupEntry(g)
	if err == nil {
		defer releaseAll(recs)
	}
	var seg *activeSegment
	var off int64
	<-prevReserved
	ctx, cancel := context.WithTimeout(context.Background(), w.a.IOTimeout)
	defer cancel()
	if err == nil && w.segments {
		seg, off, err = w.reserveFrame(ctx, g.pos, data.size)
	}
	close(reserved)
	if seg != nil {
		defer seg.writes.Done()
		err = w.writeFrame(ctx, seg, off, g.pos, data)
		if err == nil {
			err = w.confirmEpoch(ctx)
		} else if ferr := w.confirmEpoch(ctx); errors.Is(ferr, ErrFenced) {
			// A new owner's sweep may delete a fenced writer's stray segment under it: the write
			// fails because the shard moved, and says so.
			err = ferr
		}
		if err != nil {
			seg.fail(off) // at once: the groups after this one in the segment will fail too
		}
	} else if err == nil {
		err = w.writeEntry(ctx, g.pos, data)
	}
	var size int64
	if data != nil { // nil when the group failed before its entry was made
		size = int64(data.size)
	}
	w.releaseEncodings(g, data)
	<-prev
	if err == nil && seg == nil && w.mustConfirmEntry(g.pos) {
		err = w.confirmEpoch(ctx)
	}
	if err == nil && seg != nil && seg.failedAtOrBefore(off) {
		err = ErrEarlierFrameFailed
		w.mu.Lock()
		if w.fenced != nil { // the earlier group found the shard claimed: say so
			err = w.fenced
		}
		w.mu.Unlock()
	}
	if err != nil {
		if seg != nil {
			seg.fail(off) // a claim stops reading the segment here: so must every later frame
		}
		w.mu.Lock()
		w.lastFailed = max(w.lastFailed, g.pos)
		w.mu.Unlock()
		finish(err)
		return
	}
	loc := walLoc{}
	if seg != nil {
		loc = walLoc{Segment: seg.name, Offset: off, Length: size}
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	w.mu.Lock()
	w.insertLocked(recs, g.pos, loc, size)
	full := w.active.rows >= w.opts.SealRows || w.active.bytes >= w.opts.SealBytes
	w.mu.Unlock()
	w.a.Metrics.appends.Add(float64(len(g.appends)))
	w.a.Metrics.rowsAppended.Add(float64(rows))
	w.a.Metrics.walEntries.Inc()
	finish(nil)
	if full && w.sealing.CompareAndSwap(false, true) {
		w.bg.Add(1)
		go func() {
			defer w.bg.Done()
			defer w.sealing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), w.a.IOTimeout)
			defer cancel()
			if err := w.Seal(ctx); err != nil {
				slog.Warn("shard: size-triggered seal failed", "store", w.a.Name, "shard", w.shard, "err", err)
			}
		}()
	}
}

// minRowsPerBatch: a group whose appends average fewer rows is kept in the memtable as one
// concatenated batch rather than a batch per append (each batch costs an array header per
// column, which for single-row appends would outweigh the rows).
const minRowsPerBatch = 32

// keepAsAppended reports whether recs, one WAL entry's rows in order, go into the memtable as
// they are, a batch each; otherwise they are joined into one (see minRowsPerBatch).
func keepAsAppended(recs []arrow.RecordBatch) bool {
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	return len(recs) <= 1 || rows >= minRowsPerBatch*int64(len(recs))
}

// groupEntry returns the WAL entry of group g — its appends' rows in order, as one IPC stream —
// and the batches holding those rows in the same order for the memtable (the caller releases
// them). When every append was encoded with the same schema message (the common case: one client
// shape), the entry is spliced from their encodings without copying or encoding rows again, and
// the appends' records are kept as they are; otherwise the records are concatenated and encoded.
func (w *Writer) groupEntry(g *commitGroup) ([]arrow.RecordBatch, *entryData, error) {
	if g.fenced != nil {
		return nil, nil, g.fenced
	}
	parts := make([]arrow.RecordBatch, len(g.appends))
	encoded := make([]*entryData, len(g.appends))
	for i, p := range g.appends {
		parts[i], encoded[i] = p.rec, p.encoded
	}
	var data *entryData
	if len(encoded) == 1 {
		data = encoded[0]
	} else if spliced, ok := spliceEntries(encoded); ok {
		data = spliced
	}
	if data != nil && keepAsAppended(parts) {
		for _, p := range parts {
			p.Retain()
		}
		return parts, data, nil
	}
	rec, err := arrowutil.Concat(w.a.Schema, parts, w.a.Allocator)
	if err != nil {
		return nil, nil, err
	}
	if data == nil {
		if data, err = gatherEntry(rec, w.a.Allocator); err != nil {
			rec.Release()
			return nil, nil, err
		}
	}
	return []arrow.RecordBatch{rec}, data, nil
}

// releaseEncodings hands the group's buffers back once its entry is written (or failed): each
// append's encoding and the group's entry when it is a separate one (spliced or re-encoded).
func (w *Writer) releaseEncodings(g *commitGroup, data *entryData) {
	for _, p := range g.appends {
		if p.encoded == data {
			data = nil // a group of one append: its encoding is the entry
		}
		if p.encoded != nil {
			p.encoded.release()
			p.encoded = nil
		}
	}
	if data != nil {
		data.release()
	}
}

// writeEntry creates the entry object at pos. A position already taken is a claimer's fence
// (the error says whether the shard moved); whether a written entry needs the epoch confirmed
// is decided once the lower positions are done (see commit).
func (w *Writer) writeEntry(ctx context.Context, pos uint64, data *entryData) error {
	putErr := w.a.Objects.PutIfAbsent(ctx, EntryKey(w.shard, pos), data.join())
	if !errors.Is(putErr, objstore.ErrExists) {
		return putErr
	}
	if err := w.confirmEpoch(ctx); err != nil {
		return err
	}
	return fmt.Errorf("shard: shard %s WAL position %d is taken at our epoch %d: %w", w.shard, pos, w.epoch, putErr)
}

// mustConfirmEntry reports whether the entry written at pos may be acknowledged only after the
// manifest is read again: always when the claim promised no window, and when a group failed at
// one of the window's positions below pos. Called once every lower position's group is done.
func (w *Writer) mustConfirmEntry(pos uint64) bool {
	if w.uncheckedWindow == 0 {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastFailed > 0 && pos-w.lastFailed <= w.uncheckedWindow
}

// confirmEpoch reads the shard manifest after a group's write: the group may be acknowledged
// only if the shard is still ours.
func (w *Writer) confirmEpoch(ctx context.Context) error {
	m, _, err := latestShardManifest(ctx, w.a.Objects, w.shard, w.a.manifests)
	if err != nil {
		return err
	}
	if m == nil || m.Epoch != w.epoch {
		return w.fence(m)
	}
	return nil
}

// Seal freezes the active memtable and writes every frozen memtable, oldest first, as a sealed
// generation. Appends continue meanwhile: they only wait for the swap.
func (w *Writer) Seal(ctx context.Context) error {
	w.sealMu.Lock()
	defer w.sealMu.Unlock()
	w.mu.Lock()
	if w.fenced != nil {
		err := w.fenced
		w.mu.Unlock()
		return err
	}
	if !w.active.empty() {
		w.frozen = append(w.frozen, w.active)
		w.active = newMemtable()
	}
	toSeal := append([]*memtable(nil), w.frozen...)
	w.mu.Unlock()

	for _, m := range toSeal {
		if err := w.sealOne(ctx, m); err != nil {
			w.a.Metrics.seals.WithLabelValues("error").Inc()
			return err
		}
		w.mu.Lock()
		w.frozen = w.frozen[1:]
		w.releaseMemtable(m)
		w.mu.Unlock()
		w.a.Metrics.seals.WithLabelValues("sealed").Inc()
	}
	return nil
}

// sealOne commits m as the shard's next generation. The rows stay where they are, in m's WAL
// entries: the seal writes only the key file (keys, _seq, tombstones and (entry, row) locations)
// and the manifest edit, so sealing costs O(keys), not a second copy of every byte appended.
func (w *Writer) sealOne(ctx context.Context, m *memtable) error {
	var gen Generation
	if len(m.index) > 0 {
		keys := m.keyFile()
		cur, _, err := latestShardManifest(ctx, w.a.Objects, w.shard)
		if err != nil {
			return err
		}
		if cur == nil || cur.Epoch != w.epoch {
			return w.fence(cur)
		}
		gen = Generation{Gen: cur.NextGeneration, FirstEntry: m.firstPos, LastEntry: m.lastPos,
			Rows: int64(len(keys.Keys)), Bytes: max(m.bytes, m.walBytes), SealedAt: time.Now().UTC(),
			MinKey: keys.Keys[0], MaxKey: keys.Keys[len(keys.Keys)-1], MinSeq: keys.Seqs[0]}
		for _, s := range keys.Seqs {
			gen.MinSeq, gen.MaxSeq = min(gen.MinSeq, s), max(gen.MaxSeq, s)
		}
		gen.KeysPath = GenerationKeysPath(w.shard, gen.Gen, randomName())
		if err := w.a.Objects.PutIfAbsent(ctx, gen.KeysPath, encodeKeys(keys)); err != nil {
			return err
		}
		cache.Add(w.a.cache, "keys", gen.KeysPath, keys, keys.approxBytes())
	}
	var before uint64 // replay_after before this seal
	w.mu.Lock()
	retired := slices.Clone(w.retired)
	w.mu.Unlock()
	var segGarbage []SegmentRef
	next, obsolete, err := UpdateManifest(ctx, w.a.Objects, w.shard, func(cur *ShardManifest) (*ShardManifest, error) {
		if cur.Epoch != w.epoch {
			return nil, w.fence(cur)
		}
		before = cur.ReplayAfter
		if gen.KeysPath != "" {
			if cur.NextGeneration != gen.Gen {
				return nil, fmt.Errorf("shard: shard %s generation %d was taken", w.shard, gen.Gen)
			}
			cur.Generations = append(cur.Generations, gen)
			cur.NextGeneration++
		}
		cur.ReplayAfter = max(cur.ReplayAfter, m.lastPos)
		if w.drained.Load() {
			cur.UncheckedWindow = 0
		}
		cur.listSegments(retired)
		segGarbage = cur.dropGarbageSegments()
		return cur, nil
	})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.retired = w.retired[len(retired):]
	for _, ref := range retired { // listed now: the manifest decides their fate from here on
		delete(w.liveSegments, ref.Name)
	}
	w.mu.Unlock()
	w.gc.delete(append(segmentKeys(w.shard, refNames(segGarbage)), obsolete...)...)
	w.pending.Store(int64(len(next.Generations)))
	if gen.KeysPath != "" && w.segments {
		w.rollBelow.Store(max(w.rollBelow.Load(), m.lastPos+1)) // seals are serialised (sealMu)
	}
	if gen.KeysPath != "" && w.cfg.OnSeal != nil {
		w.cfg.OnSeal(len(next.Generations))
	}
	// Positions this seal moved under replay_after that its generation does not hold (a seal of
	// nothing but a fence, an unused position before the memtable's first) are garbage: no
	// generation sealed before holds them, none sealed later will.
	var garbage [][2]uint64
	if gen.KeysPath == "" {
		garbage = append(garbage, [2]uint64{before + 1, next.ReplayAfter})
	} else {
		garbage = append(garbage, [2]uint64{before + 1, gen.FirstEntry - 1}, [2]uint64{gen.LastEntry + 1, next.ReplayAfter})
	}
	if keys, ok := entryKeysIn(w.shard, garbage...); ok {
		w.gc.delete(keys...)
	} else {
		w.gc.requestSweep() // a wide range: the sweep lists the entries instead
	}
	return nil
}

// fence records that the shard moved to another epoch and returns the error.
func (w *Writer) fence(cur *ShardManifest) error {
	err := fmt.Errorf("%w: shard %s", ErrFenced, w.shard)
	if cur != nil {
		err = fmt.Errorf("%w: shard %s is now held by %q at epoch %d (ours %d)", ErrFenced, w.shard, cur.Instance, cur.Epoch, w.epoch)
	}
	w.mu.Lock()
	w.fenced = err
	w.mu.Unlock()
	return err
}

// MemRow is a key's newest row in a writer's memtables: row Row of Rec (retained by whoever
// holds the MemRow), with its _seq and tombstone flag.
type MemRow struct {
	Key  string
	Rec  arrow.RecordBatch
	Row  int
	Seq  uint64
	Tomb bool
}

// Lookup returns key's newest row in the memtables as a one-row record (Row 0; retained: the
// caller releases Rec), if any.
func (w *Writer) Lookup(key string) (MemRow, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best MemRow
	found := false
	for _, m := range append(append([]*memtable(nil), w.frozen...), w.active) {
		rec, ref, ok := m.row(key)
		if !ok {
			continue
		}
		if found && ref.seq < best.Seq {
			rec.Release()
			continue
		}
		if best.Rec != nil {
			best.Rec.Release()
		}
		best, found = MemRow{Key: key, Rec: rec, Seq: ref.seq, Tomb: ref.tomb}, true
	}
	return best, found
}

// MemView is a writer's memtable rows after a cursor, newest per key, in no order; it retains
// the memtable batches its rows point into (a concurrent seal cannot free them) until Release.
type MemView struct {
	Rows []MemRow
	held []arrow.RecordBatch
}

// Release lets the view's batches go.
func (v *MemView) Release() {
	for _, r := range v.held {
		r.Release()
	}
	v.held = nil
}

// View returns the memtables' newest row of every key greater than after.
func (w *Writer) View(after string) *MemView {
	v := &MemView{}
	w.mu.Lock()
	defer w.mu.Unlock()
	newest := map[string]MemRow{}
	for _, m := range append(append([]*memtable(nil), w.frozen...), w.active) {
		for _, b := range m.batches {
			b.Retain()
			v.held = append(v.held, b)
		}
		for k, ref := range m.index {
			if k <= after {
				continue
			}
			if cur, ok := newest[k]; ok && cur.Seq > ref.seq {
				continue
			}
			newest[k] = MemRow{Key: k, Rec: m.batches[ref.batch], Row: ref.row, Seq: ref.seq, Tomb: ref.tomb}
		}
	}
	for _, r := range newest {
		v.Rows = append(v.Rows, r)
	}
	return v
}

// ShardID is the shard the writer owns.
func (w *Writer) ShardID() string { return w.shard }

// PendingGenerations is the shard's sealed generations waiting to be merged, as of the writer's
// last manifest read (or merge in this process).
func (w *Writer) PendingGenerations() int64 { return w.pending.Load() }

// NoteMerged records that a merge in this process dropped n of the shard's generations.
func (w *Writer) NoteMerged(n int) { w.pending.Add(-int64(n)) }

// SealIfDue seals when the active memtable has held rows for at least maxAge, or an earlier seal
// left frozen memtables behind, and asks the collector for a WAL sweep when one is due. It
// reports whether it sealed.
func (w *Writer) SealIfDue(ctx context.Context, maxAge time.Duration) (bool, error) {
	w.gc.sweepIfDue()
	w.mu.Lock()
	due := len(w.frozen) > 0 || (!w.active.firstAt.IsZero() && time.Since(w.active.firstAt) >= maxAge)
	w.mu.Unlock()
	if !due {
		return false, nil
	}
	return true, w.Seal(ctx)
}

// Close seals what is left, stops the committer and the collector and waits for every goroutine
// the writer started.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.quit)
	<-w.stopped
	w.drained.Store(true)
	if w.seg != nil { // the committer has stopped: nothing reserves any more
		w.retire(w.seg)
		w.seg = nil
	}
	w.bg.Wait() // retirements (their refs go into the seal below) and a size-triggered seal
	err := w.Seal(ctx)
	if errors.Is(err, ErrFenced) {
		err = nil // the new owner replays everything we had
	}
	w.mu.Lock()
	for _, m := range append(w.frozen, w.active) {
		w.releaseMemtable(m)
	}
	w.frozen, w.active = nil, newMemtable()
	w.mu.Unlock()
	w.cfg.WriteBuffer.unregister(w)
	w.gc.stop()
	return err
}

// insertLocked adds one WAL entry's rows to the active memtable and counts the bytes they add in
// the process's write buffer. w.mu is held (or, during a claim, the writer is not yet shared).
func (w *Writer) insertLocked(recs []arrow.RecordBatch, pos uint64, loc walLoc, size int64) {
	before := w.active.bytes
	w.active.insert(recs, pos, loc, size, w.a.KeyColumn)
	w.cfg.WriteBuffer.grow(w.active.bytes - before)
}

// releaseMemtable lets m's rows go and returns their bytes to the write buffer. Every memtable a
// writer created passes here exactly once (sealed, closed, or dropped by a failed claim).
func (w *Writer) releaseMemtable(m *memtable) {
	m.release()
	w.cfg.WriteBuffer.shrink(m.bytes)
	m.bytes = 0
}

// unsealedBytes is what the writer's memtables hold (the write buffer seals the largest first).
func (w *Writer) unsealedBytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.active.bytes
	for _, m := range w.frozen {
		n += m.bytes
	}
	return n
}

// Abandon stops the writer as a process that dies would: the committer and the collector stop,
// nothing is sealed or deleted, the segment descriptor is closed unsynced and the memtables are
// dropped. Every acknowledged row stays in the WAL for the shard's next claim. Crash tests use
// it; the writer must not be used afterwards.
func (w *Writer) Abandon() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	close(w.quit)
	<-w.stopped
	w.drained.Store(true)
	w.gc.cancel()
	<-w.gc.done
	w.bg.Wait()
	if w.seg != nil {
		_ = w.seg.file.Close()
	}
	w.mu.Lock()
	for _, m := range append(w.frozen, w.active) {
		w.releaseMemtable(m)
	}
	w.frozen, w.active = nil, newMemtable()
	w.mu.Unlock()
	w.cfg.WriteBuffer.unregister(w)
}

// NextPosition is the WAL position the next group commit will take (for observation).
func (w *Writer) NextPosition() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nextPos
}

// RetiredSegments is how many segments the writer moved past that no seal has listed yet (for
// observation).
func (w *Writer) RetiredSegments() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.retired)
}
