// Claiming a shard: the one way a writer starts.
//
// Fencing: Claim bumps the shard's epoch in its manifest, then lists the WAL entries and
// segments, closes the earlier epochs' segments at what it found (segmentlife.go), writes empty
// fence entries where the previous writer could still write (below) and replays everything up to
// the highest fence. Nothing acknowledged is lost; once a fenced writer sees the higher epoch it
// fails every later append with ErrFenced.
//
// Which positions are fenced follows from what the previous epoch's writer promised in the
// manifest (UncheckedWindow, W): at most W entry writes in flight, at consecutive positions, a
// position taken only once every position W or more below it is done (written or failed). With M
// the highest position found, the claim fences every position of (M, M+W] and every position
// above replay_after and below M it did not find (a listing is not a snapshot: an entry below M
// may land after its page was read), in one round of concurrent put-if-absent writes; a fence
// that finds an entry there lists again. An entry written at one of those positions after the
// listing loses to the fence; one written before it is found and replayed. The first position
// above M+W the writer takes comes after its group at M+1 is done, and that group failed against
// a fence: after a failure, the writer re-reads the manifest before acknowledging (writer.go,
// commit), and finds the bumped epoch. A writer that promised nothing (W = 0: it re-reads the
// manifest after every write, as segment writers and earlier releases do) is fenced from M+1
// only: whatever it wrote was written before the bump (found) or is never acknowledged.
package shard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// Claim takes ownership of cfg.Shard for this process and replays its unsealed WAL entries: the
// returned writer holds every row the shard acknowledged and not yet sealed, and appends from here.
func Claim(ctx context.Context, a *Access, cfg Config) (*Writer, error) {
	shard := cfg.Shard
	inPlace := objstore.WritesInPlace(a.Objects)
	segments := inPlace && !cfg.Writer.EntryObjects
	opts := cfg.Writer.withDefaults(segments)
	window := uint64(0) // what this epoch's writer promises (see UncheckedWindow)
	if !segments && opts.CommitsInFlight <= maxUncheckedWindow {
		window = uint64(opts.CommitsInFlight)
	}
	var previousWindow uint64
	m, obsolete, err := UpdateManifest(ctx, a.Objects, shard, func(cur *ShardManifest) (*ShardManifest, error) {
		if cur.UncheckedWindow > maxUncheckedWindow {
			return nil, fmt.Errorf("shard: corrupt shard manifest %s: it promises %d unchecked writes (at most %d)", ManifestKey(shard, cur.Version), cur.UncheckedWindow, maxUncheckedWindow)
		}
		previousWindow = cur.UncheckedWindow
		cur.Epoch++
		cur.Instance = cfg.Instance
		// Never below the previous promise: should this claim fail before its fences are
		// placed, the next claim must still fence for the previous writer.
		cur.UncheckedWindow = max(window, previousWindow)
		return cur, nil
	})
	if err != nil {
		return nil, fmt.Errorf("shard: claim shard %s: %w", shard, err)
	}
	if err := a.Objects.Put(ctx, shardMarker(shard), nil); err != nil {
		return nil, err
	}
	w := &Writer{a: a, cfg: cfg, shard: shard, epoch: m.Epoch, opts: opts, active: newMemtable(), segments: segments,
		uncheckedWindow: window, wake: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{}), liveSegments: map[string]bool{}}
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
	// fences are placed: they go above every position found.
	scan := &walScan{}
	if inPlace {
		if scan, err = scanSegments(ctx, a, shard, m); err != nil {
			return nil, err
		}
	}
	fence, err := placeFences(ctx, a, shard, max(m.ReplayAfter, scan.last), m.ReplayAfter, previousWindow)
	if err != nil {
		return nil, err
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

// maxFenceRounds bounds placeFences' listings: each round that finds an entry under a fence
// means the previous writer wrote past the last listing, which it stops doing within a window.
const maxFenceRounds = 64

// placeFences writes the claim's fence entries (see the file comment): with M the highest
// position among the entry objects and found (the segments' highest position, or replay_after),
// every position of (M, M+window] and each missing one of (replayAfter, M] when window > 0 (a
// writer that re-reads the manifest after each write needs none there). It returns the highest
// fence; the new writer starts above it.
func placeFences(ctx context.Context, a *Access, shard string, found, replayAfter, window uint64) (uint64, error) {
	empty := emptyRecord(a.Schema, a.Allocator)
	fenceData, err := encodeEntry(empty, a.Allocator)
	empty.Release()
	if err != nil {
		return 0, err
	}
	for range maxFenceRounds {
		objs, err := objstore.ListAll(ctx, a.Objects, EntryPrefix(shard))
		if err != nil {
			return 0, err
		}
		last := found
		exists := map[uint64]bool{}
		for _, o := range objs {
			if p, ok := parseNumbered(o.Key, EntryPrefix(shard), ".arrows"); ok {
				last = max(last, p)
				exists[p] = true
			}
		}
		var positions []uint64
		from := last + 1
		if window > 0 {
			from = replayAfter + 1
		}
		for p := from; p <= last+max(window, 1); p++ {
			if !exists[p] {
				positions = append(positions, p)
			}
		}
		taken := false
		var mu sync.Mutex
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(maxUncheckedWindow)
		for _, p := range positions {
			g.Go(func() error {
				err := a.Objects.PutIfAbsent(gctx, EntryKey(shard, p), fenceData)
				if errors.Is(err, objstore.ErrExists) {
					mu.Lock()
					taken = true // the previous writer got there first: list again
					mu.Unlock()
					return nil
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return 0, err
		}
		if !taken {
			return last + max(window, 1), nil
		}
	}
	return 0, fmt.Errorf("shard: claim shard %s: the previous writer kept writing past %d fence rounds", shard, maxFenceRounds)
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
