// Merging key-index runs: a new run and the tail runs it is folded into become one run, streamed.
// The older runs are read a window of pages at a time (never cached: nobody reads them again),
// merged by key with the newest run's live entry winning, and encoded as they are produced, so a
// merge holds the run it writes and a window per input — not every entry of every input decoded,
// concatenated and sorted (which grew with the table: the largest merges rewrite the whole index).
package table

import (
	"context"
	"fmt"
	"slices"
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
	page   *indexPage
	i      int // the next entry of page
}

func (r *runReader) peek(ctx context.Context) (indexEntry, bool, error) {
	for r.page == nil || r.i >= r.page.len() {
		if r.next >= len(r.footer.pages) {
			return indexEntry{}, false, nil
		}
		p := r.footer.pages[r.next]
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

// holds reports whether the window holds all of page p (written so that no sum overflows).
func (r *runReader) holds(p pageRef) bool {
	n := int64(len(r.window))
	return p.offset >= r.at && p.length >= 0 && p.length <= n && p.offset-r.at <= n-p.length
}

// fill reads the window starting at page r.next: as many contiguous pages as fit in
// mergeWindowBytes (at least one).
func (r *runReader) fill(ctx context.Context) error {
	pages := r.footer.pages
	first := pages[r.next]
	end := r.next + 1
	for end < len(pages) && pages[end].offset+pages[end].length-first.offset <= mergeWindowBytes &&
		pages[end].offset == pages[end-1].offset+pages[end-1].length {
		end++
	}
	last := pages[end-1]
	data, err := r.t.store.GetRange(ctx, r.seg.Path, first.offset, last.offset+last.length-first.offset)
	if err != nil {
		return fmt.Errorf("table: read key index %s: %w", r.seg.Path, err)
	}
	if int64(len(data)) < last.offset+last.length-first.offset {
		return fmt.Errorf("%w: %s is shorter than its footer says", errCorruptIndex, r.seg.Path)
	}
	r.window, r.at = data, first.offset
	return nil
}

// mergeRuns merges the stored runs older and the entries newest (sorted, one per key) into one
// run's bytes: per key, its live entry in manifest m (liveEntries, as scans walk the index); keys
// with no live entry are dropped. It returns the bytes and the
// number of entries written.
func (t *Table) mergeRuns(ctx context.Context, m *Manifest, older []IndexRun, newest []indexEntry) ([]byte, int, error) {
	// The output is at most the inputs: size the Bloom filter and the buffer for them once.
	estimate, size := len(newest), int64(0)
	for _, e := range newest {
		size += int64(len(e.Key)) + 16 // its varints and flag, typically
	}
	cursors := make([]keyCursor, 0, len(older)+1)
	for _, seg := range older {
		f, err := t.footer(ctx, seg)
		if err != nil {
			return nil, 0, err
		}
		estimate += int(f.entries)
		size += seg.Bytes
		cursors = append(cursors, &runReader{t: t, seg: seg, footer: f})
	}
	cursors = append(cursors, &sliceCursor{entries: newest})
	w := newSegmentWriter(estimate, size)
	if err := t.liveEntries(ctx, m, cursors, func(e indexEntry) bool { w.add(e); return true }); err != nil {
		return nil, 0, err
	}
	return w.finish(), w.entries(), nil
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
	data, n, err := t.mergeRuns(ctx, m, older, entries)
	if err != nil {
		return IndexRun{}, err
	}
	return t.putRun(ctx, data, n)
}

// IndexRunFootprint estimates the memory that adding a run of n entries to m's key index holds
// beyond the entries themselves: the tail runs it merges, encoded (the merged run is built in
// memory before it is stored), and a read window per merged run. Zero without an index or when
// nothing is merged.
func IndexRunFootprint(m *Manifest, n int64) int64 {
	if m.KeyIndex == nil {
		return 0
	}
	_, tail := tailRuns(m.KeyIndex.Runs, int(n))
	var bytes int64
	for _, r := range tail {
		bytes += r.Bytes + min(r.Bytes, mergeWindowBytes)
	}
	return bytes
}

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
