// Merging key-index runs: a new run and the tail runs it is folded into become one run, streamed.
// The older runs are read a window of pages at a time (never cached: nobody reads them again),
// merged by key with the newest run's live entry winning, and encoded as they are produced, so a
// merge holds the run it writes and a window per input — not every entry of every input decoded,
// concatenated and sorted (which grew with the table: the largest merges rewrite the whole index).
package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/strata-store/strata/storage/objstore"
)

// Runs are tiered: a new run takes in the newest runs while each holds at most tierRatio times
// what the merged run would hold so far (tailRuns), whoever writes it — an upsert, a compaction
// or an incremental index build.

// mergeWindowBytes bounds one read of an input run's pages.
const mergeWindowBytes = 1 << 20

// runReader walks one stored run in key order, reading contiguous pages a window at a time.
type runReader struct {
	t      *Table
	seg    IndexRun
	footer *runFooter
	next   int    // the next page to decode
	window []byte // the pages read last, contiguous
	at     int64  // window's offset in the run
	// pooled is the window's buffer when the store reads into the caller's memory: a
	// windowBuffers buffer reused for every fill (decoded pages copy what they keep) and given
	// back by release, instead of a fresh allocation per window.
	pooled *[]byte
	page   *indexPage
	i      int // the next entry of page
}

// windowBufferBytes is the size of a pooled window buffer: a window up to it is read into one.
const windowBufferBytes = 1 << 20

// windowBuffers recycles the windows' buffers: a fresh megabyte costs its page faults on every
// merge.
var windowBuffers = sync.Pool{New: func() any { b := make([]byte, 0, windowBufferBytes); return &b }}

func (r *runReader) peek(ctx context.Context) (indexEntry, bool, error) {
	for r.page == nil || r.i >= r.page.len() {
		if r.next >= r.footer.pages.len() {
			return indexEntry{}, false, nil
		}
		p := r.footer.pages.at(r.next)
		if !r.holds(p) {
			if err := r.fill(ctx); err != nil {
				return indexEntry{}, false, err
			}
			if !r.holds(p) { // a footer naming bytes the run does not have
				return indexEntry{}, false, fmt.Errorf("%w: %s page %d is outside the run", errCorruptIndex, r.seg.Path, r.next)
			}
		}
		page, err := decodePage(r.window[p.offset-r.at : p.offset-r.at+p.length])
		if err != nil {
			return indexEntry{}, false, fmt.Errorf("%w (%s)", err, r.seg.Path)
		}
		r.page, r.i = page, 0
		r.next++
	}
	return r.page.at(r.i), true, nil
}

func (r *runReader) advance() { r.i++ }

// release gives the window's pooled buffer back; the reader reads no more.
func (r *runReader) release() {
	if r.pooled != nil {
		*r.pooled = (*r.pooled)[:0]
		windowBuffers.Put(r.pooled)
		r.pooled, r.window = nil, nil
	}
}

// holds reports whether the window holds all of page p (written so that no sum overflows).
func (r *runReader) holds(p pageRef) bool {
	n := int64(len(r.window))
	return p.offset >= r.at && p.length >= 0 && p.length <= n && p.offset-r.at <= n-p.length
}

// fill reads the window starting at page r.next: as many contiguous pages as fit in
// mergeWindowBytes (at least one).
func (r *runReader) fill(ctx context.Context) error {
	pages := &r.footer.pages
	first := pages.at(r.next)
	end := r.next + 1
	for end < pages.len() && pages.offsets[end]+pages.lengths[end]-first.offset <= mergeWindowBytes &&
		pages.offsets[end] == pages.offsets[end-1]+pages.lengths[end-1] {
		end++
	}
	last := pages.at(end - 1)
	n := last.offset + last.length - first.offset
	var data []byte
	var err error
	if n <= windowBufferBytes && objstore.ReadsInto(r.t.store) {
		if r.pooled == nil {
			r.pooled = windowBuffers.Get().(*[]byte)
		}
		var got int
		got, err = objstore.ReadRangeInto(ctx, r.t.store, r.seg.Path, first.offset, (*r.pooled)[:n])
		data = (*r.pooled)[:got]
	} else {
		data, err = r.t.store.GetRange(ctx, r.seg.Path, first.offset, n)
	}
	if err != nil {
		return fmt.Errorf("table: read key index %s: %w", r.seg.Path, err)
	}
	if int64(len(data)) < n {
		return fmt.Errorf("%w: %s is shorter than its footer says", errCorruptIndex, r.seg.Path)
	}
	r.window, r.at = data, first.offset
	return nil
}

// mergeRuns merges the stored runs older and the entries newest (sorted, one per key) into one
// new stored run: per key, its live entry in manifest m (liveEntries, as scans walk the index);
// keys with no live entry are dropped. A run of more than a chunk streams into its object on a
// store that writes in place (objstore.Sink), so the merge holds a chunk of it, a page, a read
// window per input and the run's footer; elsewhere the run is built in memory and stored whole.
func (t *Table) mergeRuns(ctx context.Context, m *Manifest, older []IndexRun, newest []indexEntry) (IndexRun, error) {
	var size int64
	for _, e := range newest {
		size += int64(len(e.Key)) + 16 // its varints and flag, typically
	}
	rm, err := t.newRunMerge(ctx, m, older, len(newest), size, true)
	if err != nil {
		return IndexRun{}, err
	}
	for _, e := range newest {
		if err := rm.add(ctx, e); err != nil {
			rm.abort()
			return IndexRun{}, err
		}
	}
	return rm.finish(ctx)
}

// runMerge writes one new run from the stored runs older and entries its owner adds in key
// order, as liveEntries would walk them with the added entries as the newest run: per key its
// live entry in a manifest, an added one first. The added entries need not exist before the
// merge starts: a compaction adds each output row group's entries as it writes the row group,
// so it never holds its output's entries (those are live by construction, in fragments the
// manifest does not hold yet: judgeAdded false). One goroutine owns a runMerge; it ends with
// finish or abort.
type runMerge struct {
	lm         *liveMerge
	readers    []*runReader // the older runs' readers, released when the merge ends
	judgeAdded bool         // added entries are checked for liveness too
	t          *Table
	out        objstore.Sink
	w          *segmentWriter
	path       string
	write      func(indexEntry) bool // w.add, as the merge's callback (made once)
	prev       string                // the last key added
	added      bool                  // prev is set
}

// newRunMerge starts a run merging older (judged in m) with about added entries of about
// addedBytes encoded bytes yet to come (they size the Bloom filter and an in-memory run).
func (t *Table) newRunMerge(ctx context.Context, m *Manifest, older []IndexRun, added int, addedBytes int64, judgeAdded bool) (*runMerge, error) {
	estimate, size := added, addedBytes
	rm := &runMerge{t: t, judgeAdded: judgeAdded, path: runPath()}
	cursors := make([]keyCursor, 0, len(older))
	for _, seg := range older {
		f, err := t.footer(ctx, seg)
		if err != nil {
			rm.releaseReaders()
			return nil, err
		}
		estimate += int(f.entries)
		size += seg.Bytes
		r := &runReader{t: t, seg: seg, footer: f}
		rm.readers = append(rm.readers, r)
		cursors = append(cursors, r)
	}
	var err error
	if rm.lm, err = t.newLiveMerge(ctx, m, cursors); err != nil {
		rm.releaseReaders()
		return nil, err
	}
	if rm.out, err = objstore.NewSink(ctx, t.store, rm.path, size); err != nil {
		rm.releaseReaders()
		return nil, err
	}
	rm.out.Reserve(int(min(size, 1<<31)))
	rm.w = newSegmentWriter(rm.out, estimate)
	rm.write = func(e indexEntry) bool { rm.w.add(e); return true }
	return rm, nil
}

// errEntriesOutOfOrder: an entry added to a run merge before a key it already holds (a bug
// in its owner, never expected; caught before it could store a run lookups would misread).
var errEntriesOutOfOrder = errors.New("table: key-index entries added out of key order")

// add writes the older runs' live entries below e's key, then e (when live, if judged); the
// older runs' entries of e's key are dropped once e is written. A second entry of the key just
// added is dropped too once one was written (as liveEntries keeps the first live entry of a key).
func (rm *runMerge) add(ctx context.Context, e indexEntry) error {
	if rm.added && e.Key < rm.prev {
		return fmt.Errorf("%w (%q after %q)", errEntriesOutOfOrder, e.Key, rm.prev)
	}
	if rm.added && e.Key == rm.prev && rm.lm.emitted && rm.lm.last == e.Key {
		return nil
	}
	rm.prev, rm.added = e.Key, true
	if _, err := rm.lm.emit(ctx, e.Key, true, rm.write); err != nil {
		return err
	}
	if rm.judgeAdded {
		if live, err := rm.lm.lv.live(ctx, e); err != nil || !live {
			return err // not live: an older run's live entry of the key, if any, is written instead
		}
	}
	rm.lm.claim(e.Key)
	rm.w.add(e)
	return nil
}

// entries is how many entries the run holds so far.
func (rm *runMerge) entries() int { return rm.w.entries() }

// finish writes what is left of the older runs and the footer, and stores the run.
func (rm *runMerge) finish(ctx context.Context) (IndexRun, error) {
	if _, err := rm.lm.emit(ctx, "", false, rm.write); err != nil {
		rm.abort()
		return IndexRun{}, err
	}
	rm.releaseReaders()
	rm.w.finish()
	if err := rm.out.Failed(); err != nil {
		rm.abort()
		return IndexRun{}, err
	}
	if err := rm.out.Store(ctx); err != nil {
		rm.t.deleteFiles([]string{rm.path}) // it may exist: a streamed run, or a put whose answer was lost
		return IndexRun{}, err
	}
	return IndexRun{Path: rm.path, Entries: int64(rm.w.entries()), Bytes: rm.w.size()}, nil
}

// abort ends the merge without a run, deleting what was written of it.
func (rm *runMerge) abort() {
	rm.releaseReaders()
	if rm.out.Abort() {
		rm.t.deleteFiles([]string{rm.path})
	}
}

// releaseReaders gives back the older runs' windows (every entry of theirs is written by now,
// or the merge is abandoned).
func (rm *runMerge) releaseReaders() {
	for _, r := range rm.readers {
		r.release()
	}
}

// tailRuns splits runs (oldest first) into those to keep and the tail to merge into a new run
// of n entries: the newest runs, while each holds at most tierRatio times what the merged run
// would hold so far. Runs then grow geometrically towards the oldest, so a table has
// O(log entries) runs and an entry is rewritten O(log entries) times.
func tailRuns(runs []IndexRun, n int) (keep, older []IndexRun) {
	total, i := int64(n), len(runs)
	for i > 0 && runs[i-1].Entries <= total*tierRatio {
		i--
		total += runs[i].Entries
	}
	return runs[:i], runs[i:]
}

// writeMergedRun stores entries (sorted, one per key) as one run, merged with the runs older
// when there are any (mergeRuns: entries no longer live in m are dropped).
func (t *Table) writeMergedRun(ctx context.Context, m *Manifest, older []IndexRun, entries []indexEntry) (IndexRun, error) {
	if len(older) == 0 {
		return t.writeRun(ctx, entries)
	}
	return t.mergeRuns(ctx, m, older, entries)
}

// IndexRunFootprint estimates the memory that adding a run of n entries to m's key index holds
// beyond the entries themselves when it takes in tail runs (mergeRuns): a read window per merged
// run, the merged run's footer (its page directory and Bloom filter: a few bytes an entry), and
// the run itself, whole where it is built in memory (a store that cannot write in place), a
// chunk where it streams into its object. Zero without an index or when nothing is merged.
func (t *Table) IndexRunFootprint(m *Manifest, n int64) int64 {
	if m.KeyIndex == nil {
		return 0
	}
	_, tail := tailRuns(m.KeyIndex.Runs, int(n))
	if len(tail) == 0 {
		return 0
	}
	inPlace := objstore.WritesInPlace(t.store)
	var bytes, tailBytes, tailEntries int64
	for _, r := range tail {
		bytes += min(r.Bytes, mergeWindowBytes)
		tailBytes, tailEntries = tailBytes+r.Bytes, tailEntries+r.Entries
	}
	if inPlace {
		bytes += objstore.SinkChunkBytes
	} else {
		bytes += tailBytes
	}
	// The footer: per entry its Bloom filter bits and its share of a directory entry, and per
	// page a first key, no longer than the entry bytes it stands for (the tail's average).
	entries := n + tailEntries
	return bytes + entries*runFooterBytesPerEntry + entries*tailBytes/max(tailEntries, 1)/entriesPerPage
}

// runFooterBytesPerEntry is what a run's footer holds per entry while it is built, first keys
// aside: the Bloom filter's ~2.4 bytes (bloomFalsePos at bloomStartFactor times the size, folded
// once the run is written: runbloom.go) and an entriesPerPage share of a page's directory entry
// (offset, length and the key's header: 32 bytes).
const runFooterBytesPerEntry = 3

// replaceRuns puts seg, a run that merged the runs merged, in their place in runs when they are
// all still there, in order (runs committed meanwhile stay after it: they are newer); else it
// appends seg. Appending is safe too: seg's entries were live when it was built and a lookup
// skips an entry that is no longer live, so at worst a key has two entries until the next merge
// of runs drops one.
func replaceRuns(runs, merged []IndexRun, seg IndexRun) []IndexRun {
	if len(merged) > 0 {
		if i := slices.Index(runs, merged[0]); i >= 0 && i+len(merged) <= len(runs) && slices.Equal(runs[i:i+len(merged)], merged) {
			return slices.Replace(slices.Clone(runs), i, i+len(merged), seg)
		}
	}
	return append(runs, seg)
}
