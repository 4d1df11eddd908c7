// Claiming a shard: the one way a writer starts.
//
// Fencing: Claim bumps the shard's epoch in its manifest, then lists the WAL entries and
// segments, closes the earlier epochs' segments at what it found (segmentlife.go), writes a
// fence entry above every position found (retrying higher until the put-if-absent succeeds) and
// replays everything up to it. A writer acknowledges a group only after its entry or frame is
// durable AND a later read of the manifest still shows the writer's epoch: the claimer's bump
// comes before its listing and scan, so every acknowledged group is found and replayed by the
// new owner. Nothing acknowledged is lost; once the writer sees the higher epoch it fails every
// later append with ErrFenced.
package shard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// Claim takes ownership of cfg.Shard for this process and replays its unsealed WAL entries: the
// returned writer holds every row the shard acknowledged and not yet sealed, and appends from here.
func Claim(ctx context.Context, a *Access, cfg Config) (*Writer, error) {
	shard := cfg.Shard
	m, obsolete, err := UpdateManifest(ctx, a.Objects, shard, func(cur *ShardManifest) (*ShardManifest, error) {
		cur.Epoch++
		cur.Instance = cfg.Instance
		return cur, nil
	})
	if err != nil {
		return nil, fmt.Errorf("shard: claim shard %s: %w", shard, err)
	}
	if err := a.Objects.Put(ctx, shardMarker(shard), nil); err != nil {
		return nil, err
	}
	inPlace := objstore.WritesInPlace(a.Objects)
	segments := inPlace && !cfg.Writer.EntryObjects
	opts := cfg.Writer.withDefaults(segments)
	w := &Writer{a: a, cfg: cfg, shard: shard, epoch: m.Epoch, opts: opts, active: newMemtable(), segments: segments,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{}), liveSegments: map[string]bool{}}
	w.gc = newCollector(w)
	w.gc.delete(obsolete...)
	w.pending.Store(int64(len(m.Generations)))
	ok := false
	defer func() {
		if !ok {
			w.releaseMemtable(w.active)
		}
	}()

	// What counts in the segments (only stores that write in place have any), found before the
	// fence is placed: the fence goes above every position found.
	scan := &walScan{}
	if inPlace {
		if scan, err = scanSegments(ctx, a, shard, m); err != nil {
			return nil, err
		}
	}
	empty := emptyRecord(a.Schema, a.Allocator)
	fenceData, err := encodeEntry(empty, a.Allocator)
	empty.Release()
	if err != nil {
		return nil, err
	}
	var fence uint64
	for {
		objs, err := objstore.ListAll(ctx, a.Objects, EntryPrefix(shard))
		if err != nil {
			return nil, err
		}
		last := max(m.ReplayAfter, scan.last)
		for _, o := range objs {
			if p, ok := parseNumbered(o.Key, EntryPrefix(shard), ".arrows"); ok {
				last = max(last, p)
			}
		}
		fence = last + 1
		err = a.Objects.PutIfAbsent(ctx, EntryKey(shard, fence), fenceData)
		if err == nil {
			break
		}
		if !errors.Is(err, objstore.ErrExists) {
			return nil, err
		}
	}
	// Replay every entry object and frame after the last sealed position, up to and including
	// the fence, in position order.
	objs, err := objstore.ListAll(ctx, a.Objects, EntryPrefix(shard))
	if err != nil {
		return nil, err
	}
	var replay []segmentReplay // entry objects have no payload here: they are read below
	for _, o := range objs {
		if p, ok := parseNumbered(o.Key, EntryPrefix(shard), ".arrows"); ok && p > m.ReplayAfter && p <= fence {
			replay = append(replay, segmentReplay{pos: p})
		}
	}
	replay = append(replay, scan.replay...)
	slices.SortStableFunc(replay, func(a, b segmentReplay) int { return cmp.Compare(a.pos, b.pos) })
	for _, r := range replay {
		var recs []arrow.RecordBatch
		size := r.loc.Length
		if r.loc.Segment == "" {
			recs, size, err = a.readRows(ctx, EntryKey(shard, r.pos), true)
		} else if recs, err = decodeEntry(r.payload, a.Schema, a.KeyColumn, a.Allocator, false); err != nil {
			err = fmt.Errorf("%w (%s)", err, r.loc.cacheKey(shard, r.pos))
		}
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			seqs := rec.Column(rec.Schema().FieldIndices(table.SeqColumn)[0]).(*array.Uint64)
			for i := 0; i < seqs.Len(); i++ {
				cfg.Clock.Observe(seqs.Value(i))
			}
		}
		if !keepAsAppended(recs) {
			joined, err := arrowutil.Concat(a.Schema, recs, a.Allocator)
			releaseAll(recs)
			if err != nil {
				return nil, err
			}
			recs = []arrow.RecordBatch{joined}
		}
		w.insertLocked(recs, r.pos, r.loc, size)
		releaseAll(recs)
	}
	if inPlace {
		// Close the earlier epochs' segments at what was found, before anything is acknowledged:
		// whatever a fenced writer appends from now on is never read.
		var garbage []SegmentRef
		_, obsolete, err := UpdateManifest(ctx, a.Objects, shard, func(cur *ShardManifest) (*ShardManifest, error) {
			if cur.Epoch != m.Epoch {
				return nil, fmt.Errorf("%w: shard %s was claimed again (epoch %d, ours %d)", ErrFenced, shard, cur.Epoch, m.Epoch)
			}
			cur.listSegments(scan.close)
			cur.SegmentsClosedBelow = max(cur.SegmentsClosedBelow, m.Epoch)
			garbage = cur.dropGarbageSegments()
			return cur, nil
		})
		if err != nil {
			return nil, err
		}
		w.gc.delete(segmentKeys(shard, append(scan.strays, refNames(garbage)...))...)
		w.gc.delete(obsolete...)
	}
	w.nextPos = fence + 1
	ok = true
	cfg.WriteBuffer.register(w)
	// Whatever a crash, a lost race or a failed deletion left behind in the WAL directory.
	w.gc.requestSweep()
	w.gc.start()
	go w.groupCommitter()
	return w, nil
}

// emptyRecord is a record of schema with no rows (a claim's fence entry).
func emptyRecord(schema *arrow.Schema, mem memory.Allocator) arrow.RecordBatch {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
	}
	rec := array.NewRecordBatch(schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}
