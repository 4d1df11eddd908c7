// The shard writer: one per (store, process), owning the process's shard of the store.
//
// Locking: mu guards the active memtable, the frozen list, the append queue and the fenced
// state; it is held only for in-memory work, never across I/O. sealMu serialises seals, so
// generations are added to the shard manifest in order; appends never wait for it. A single
// committer goroutine writes WAL entries in position order, so memtable insertion needs no
// further ordering.
//
// Fencing: Claim bumps the shard's epoch in its manifest, then writes a fence entry at the next
// free WAL position (retrying higher until the put-if-absent succeeds) and replays every entry up
// to it. A writer only moves to position q+1 once an object exists at q, so a fenced writer's
// next put lands on an existing position (its own last one, or the fence); it then reads the
// manifest, sees the higher epoch and fails every later append with ErrFenced. Every entry it
// wrote before is at or below the fence, so the new owner replays it: nothing acknowledged is lost.
package memwal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// WriterOptions tune a shard writer.
type WriterOptions struct {
	// GroupCommitWindow bounds how long the committer waits to gather appends (default 2ms): after
	// a wake-up until GroupCommitBytes are queued, and between back-to-back groups until as many
	// bytes as the previous group carried are queued.
	GroupCommitWindow time.Duration
	GroupCommitBytes  int64 // the most the committer waits for before writing (default 4 MiB)
	SealRows          int64 // seal when the memtable holds this many rows (default 100,000)
	SealBytes         int64 // ... or this many bytes (default 64 MiB)
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.GroupCommitWindow <= 0 {
		o.GroupCommitWindow = 2 * time.Millisecond
	}
	if o.GroupCommitBytes <= 0 {
		o.GroupCommitBytes = 4 << 20
	}
	if o.SealRows <= 0 {
		o.SealRows = 100_000
	}
	if o.SealBytes <= 0 {
		o.SealBytes = 64 << 20
	}
	return o
}

type pendingAppend struct {
	rec   arrow.RecordBatch
	bytes int64
	done  chan error
}

// Writer owns one shard of a store in this process.
type Writer struct {
	s     *Store
	shard string
	epoch uint64
	opts  WriterOptions

	mu      sync.Mutex // guards the fields below
	active  *memtable
	frozen  []*memtable // oldest first; immutable
	queue   []*pendingAppend
	queued  int64
	fenced  error
	closed  bool
	nextPos uint64

	wake    chan struct{} // nudges the committer; never closed
	quit    chan struct{} // closed by close()
	stopped chan struct{} // closed when the committer exits
	sealMu  sync.Mutex    // serialises seals
	sealing atomic.Bool
	pending atomic.Int64 // sealed generations pending merge, as of the last manifest read
}

// claim takes ownership of the shard for this process and replays its unsealed WAL entries.
func claim(ctx context.Context, s *Store, shard string) (*Writer, error) {
	m, err := updateShard(ctx, s.objects, shard, func(cur *ShardManifest) (*ShardManifest, error) {
		cur.Epoch++
		cur.Instance = s.opts.Instance
		return cur, nil
	})
	if err != nil {
		return nil, fmt.Errorf("memwal: claim shard %s: %w", shard, err)
	}
	if err := s.objects.Put(ctx, shardMarker(shard), nil); err != nil {
		return nil, err
	}
	w := &Writer{s: s, shard: shard, epoch: m.Epoch, opts: s.opts.Writer.withDefaults(), active: newMemtable(),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	w.pending.Store(int64(len(m.Generations)))

	empty, err := s.emptyRecord()
	if err != nil {
		return nil, err
	}
	fenceData, err := encodeStream(empty, s.mem)
	empty.Release()
	if err != nil {
		return nil, err
	}
	var fence uint64
	for {
		objs, err := objstore.ListAll(ctx, s.objects, entryPrefix(shard))
		if err != nil {
			return nil, err
		}
		last := m.ReplayAfter
		for _, o := range objs {
			if p, ok := parseNumbered(o.Key, entryPrefix(shard), ".arrows"); ok {
				last = max(last, p)
			}
		}
		fence = last + 1
		err = s.objects.PutIfAbsent(ctx, entryKey(shard, fence), fenceData)
		if err == nil {
			break
		}
		if !errors.Is(err, objstore.ErrExists) {
			return nil, err
		}
	}
	// Replay every entry after the last sealed position, up to and including the fence.
	objs, err := objstore.ListAll(ctx, s.objects, entryPrefix(shard))
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		p, ok := parseNumbered(o.Key, entryPrefix(shard), ".arrows")
		if !ok || p <= m.ReplayAfter || p > fence {
			continue
		}
		data, err := s.objects.Get(ctx, o.Key)
		if err != nil {
			return nil, err
		}
		rec, err := decodeStream(data, s.mem)
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, o.Key)
		}
		if rec.NumRows() > 0 {
			seqs := rec.Column(rec.Schema().FieldIndices(table.SeqColumn)[0]).(*array.Uint64)
			for i := 0; i < seqs.Len(); i++ {
				s.clock.Observe(seqs.Value(i))
			}
		}
		w.active.insert(rec, p, int64(len(data)), s.keyColumn)
		rec.Release()
	}
	w.nextPos = fence + 1
	go w.commitLoop()
	return w, nil
}

// enqueue hands a stamped record to the committer and waits until it is durable.
func (w *Writer) enqueue(ctx context.Context, rec arrow.RecordBatch) error {
	var size int64
	for _, c := range rec.Columns() {
		size += int64(c.Data().SizeInBytes())
	}
	p := &pendingAppend{rec: rec, bytes: size, done: make(chan error, 1)}
	w.mu.Lock()
	switch {
	case w.fenced != nil:
		w.mu.Unlock()
		return w.fenced
	case w.closed:
		w.mu.Unlock()
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

// commitLoop writes queued appends as WAL entries, one entry per group, in position order.
func (w *Writer) commitLoop() {
	defer close(w.stopped)
	for {
		select {
		case <-w.wake:
		case <-w.quit:
			for {
				if _, more := w.commitBatch(); !more {
					return
				}
			}
		}
		last := int64(0)
		for {
			// Gather: wait (up to the window) until as many bytes are queued as the last group
			// carried, or GroupCommitBytes: under a steady load the next group is as large as the
			// last one instead of splitting into half-size groups that each pay a sync.
			target := w.opts.GroupCommitBytes
			if last > 0 {
				target = min(target, last)
			}
			deadline := time.Now().Add(w.opts.GroupCommitWindow)
			for {
				w.mu.Lock()
				queued := w.queued
				w.mu.Unlock()
				if queued >= target || !time.Now().Before(deadline) {
					break
				}
				time.Sleep(w.opts.GroupCommitWindow / 8)
			}
			n, more := w.commitBatch()
			if !more {
				break
			}
			last = n
		}
	}
}

// commitBatch writes one group; it returns the group's bytes and whether there was one.
func (w *Writer) commitBatch() (int64, bool) {
	w.mu.Lock()
	batch := w.queue
	w.queue, w.queued = nil, 0
	fenced := w.fenced
	pos := w.nextPos
	w.mu.Unlock()
	if len(batch) == 0 {
		return 0, false
	}
	var size int64
	for _, p := range batch {
		size += p.bytes
	}
	finish := func(err error) {
		for _, p := range batch {
			p.rec.Release()
			p.done <- err
		}
	}
	if fenced != nil {
		finish(fenced)
		return size, true
	}
	parts := make([]arrow.RecordBatch, len(batch))
	for i, p := range batch {
		parts[i] = p.rec
	}
	rec, err := arrowutil.Concat(w.s.schema, parts, w.s.mem)
	if err != nil {
		finish(err)
		return size, true
	}
	defer rec.Release()
	data, err := encodeStream(rec, w.s.mem)
	if err != nil {
		finish(err)
		return size, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.s.opts.IOTimeout)
	defer cancel()
	for {
		err = w.s.objects.PutIfAbsent(ctx, entryKey(w.shard, pos), data)
		if !errors.Is(err, objstore.ErrExists) {
			break
		}
		// Someone holds this position: a new owner's fence (or our own write whose
		// acknowledgement was lost). The manifest's epoch tells which.
		m, _, merr := latestShardManifest(ctx, w.s.objects, w.shard)
		if merr != nil {
			err = merr
			break
		}
		if m != nil && m.Epoch != w.epoch {
			err = fmt.Errorf("%w: shard %s is now held by %q at epoch %d (ours %d)", ErrFenced, w.shard, m.Instance, m.Epoch, w.epoch)
			w.mu.Lock()
			w.fenced = err
			w.mu.Unlock()
			break
		}
		pos++
	}
	if err != nil {
		finish(err)
		return size, true
	}
	w.mu.Lock()
	w.active.insert(rec, pos, int64(len(data)), w.s.keyColumn)
	w.nextPos = pos + 1
	full := w.active.rows >= w.opts.SealRows || w.active.bytes >= w.opts.SealBytes
	w.mu.Unlock()
	w.s.metrics.appends.Add(float64(len(batch)))
	w.s.metrics.rowsAppended.Add(float64(rec.NumRows()))
	w.s.metrics.walEntries.Inc()
	finish(nil)
	if full && w.sealing.CompareAndSwap(false, true) {
		go func() {
			defer w.sealing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), w.s.opts.IOTimeout)
			defer cancel()
			if err := w.Seal(ctx); err != nil {
				slog.Warn("memwal: size-triggered seal failed", "shard", w.shard, "err", err)
			}
		}()
	}
	return size, true
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
			w.s.metrics.seals.WithLabelValues("error").Inc()
			return err
		}
		w.mu.Lock()
		w.frozen = w.frozen[1:]
		m.release()
		w.mu.Unlock()
		w.s.metrics.seals.WithLabelValues("sealed").Inc()
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
		cur, _, err := latestShardManifest(ctx, w.s.objects, w.shard)
		if err != nil {
			return err
		}
		if cur == nil || cur.Epoch != w.epoch {
			return w.fence(cur)
		}
		gen = Generation{Gen: cur.NextGeneration, FirstEntry: m.firstPos, LastEntry: m.lastPos,
			Rows: int64(len(keys.keys)), Bytes: m.walBytes, SealedAt: time.Now().UTC(),
			MinKey: keys.keys[0], MaxKey: keys.keys[len(keys.keys)-1], MinSeq: keys.seqs[0]}
		for _, s := range keys.seqs {
			gen.MinSeq, gen.MaxSeq = min(gen.MinSeq, s), max(gen.MaxSeq, s)
		}
		gen.KeysPath = generationKeysPath(w.shard, gen.Gen, randomName())
		if err := w.s.objects.PutIfAbsent(ctx, gen.KeysPath, encodeKeys(keys)); err != nil {
			return err
		}
		w.s.keyCache.Add(gen.KeysPath, keys)
	}
	next, err := updateShard(ctx, w.s.objects, w.shard, func(cur *ShardManifest) (*ShardManifest, error) {
		if cur.Epoch != w.epoch {
			return nil, w.fence(cur)
		}
		if gen.KeysPath != "" {
			if cur.NextGeneration != gen.Gen {
				return nil, fmt.Errorf("memwal: shard %s generation %d was taken", w.shard, gen.Gen)
			}
			cur.Generations = append(cur.Generations, gen)
			cur.NextGeneration++
		}
		cur.ReplayAfter = max(cur.ReplayAfter, m.lastPos)
		return cur, nil
	})
	if err != nil {
		return err
	}
	w.pending.Store(int64(len(next.Generations)))
	// Entries now covered by replay_after that no generation holds (fences, empty seals) are
	// garbage.
	go w.s.deleteUnreferencedEntries(w.shard, next)
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

// lookup returns key's newest row in the memtables (retained), if any.
func (w *Writer) lookup(key string) (arrow.RecordBatch, rowRef, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best arrow.RecordBatch
	var bestRef rowRef
	found := false
	for _, m := range append(append([]*memtable(nil), w.frozen...), w.active) {
		rec, ref, ok := m.row(key)
		if !ok {
			continue
		}
		if found && ref.seq < bestRef.seq {
			rec.Release()
			continue
		}
		if best != nil {
			best.Release()
		}
		best, bestRef, found = rec, ref, true
	}
	return best, bestRef, found
}

// close seals what is left and stops the committer.
func (w *Writer) close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.quit)
	<-w.stopped
	err := w.Seal(ctx)
	if errors.Is(err, ErrFenced) {
		err = nil // the new owner replays everything we had
	}
	w.mu.Lock()
	for _, m := range append(w.frozen, w.active) {
		m.release()
	}
	w.frozen, w.active = nil, newMemtable()
	w.mu.Unlock()
	return err
}
