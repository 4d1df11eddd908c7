// Key-ordered access to a version: iterate live keys in key order from a cursor (through the key
// index's sorted runs, plus an in-memory sort of any uncovered fragments' keys), and read
// specific rows back by location. This is what keyset-paginated scans are built on: a page costs
// I/O proportional to the page, not to the table.
package table

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/fragment"
)

// RowRef locates one live row of a version.
type RowRef struct {
	Key       string
	Fragment  uint64
	Row       int64
	Seq       uint64
	Tombstone bool
}

// keyCursor yields index entries of one sorted run in key order.
type keyCursor interface {
	peek(ctx context.Context) (indexEntry, bool, error)
	advance()
}

// runCursor walks one index run page by page, starting at the page holding after. Pages not in
// the cache are read ahead: the first miss reads one page, each further miss twice as many
// (up to readAheadPages) in one range read, so a long walk costs a few reads, not one per page,
// and a short one reads little past what it needs.
type runCursor struct {
	t       *Table
	seg     IndexRun
	footer  *runFooter
	page    int
	entries *indexPage // the page being walked (nil before the first)
	i       int
	after   string
	ahead   []*indexPage // pages read ahead, from page on
	window  int          // pages the next miss reads
}

// readAheadPages bounds one read-ahead (index pages are a few KiB each).
const readAheadPages = 32

func (c *runCursor) peek(ctx context.Context) (indexEntry, bool, error) {
	for {
		if c.entries != nil && c.i < c.entries.len() {
			if c.entries.key(c.i) <= c.after {
				c.i++
				continue
			}
			return c.entries.at(c.i), true, nil
		}
		if c.page >= c.footer.pages.len() {
			return indexEntry{}, false, nil
		}
		entries, err := c.nextPage(ctx)
		if err != nil {
			return indexEntry{}, false, err
		}
		c.page++
		c.entries, c.i = entries, 0
	}
}

func (c *runCursor) advance() { c.i++ }

// nextPage returns page c.page: read ahead, cached, or read now with the window of pages after
// it that are contiguous and not cached. Pages read are cached (the next scan page likely starts
// in one of them).
func (c *runCursor) nextPage(ctx context.Context) (*indexPage, error) {
	if len(c.ahead) > 0 {
		e := c.ahead[0]
		c.ahead = c.ahead[1:]
		return e, nil
	}
	pages := &c.footer.pages
	if e, ok := c.t.cachedPage(c.seg, pages.at(c.page)); ok {
		return e, nil
	}
	c.window = min(max(c.window*2, 1), readAheadPages)
	end := c.page + 1
	for end < pages.len() && end-c.page < c.window && pages.offsets[end] == pages.offsets[end-1]+pages.lengths[end-1] {
		if _, ok := c.t.cachedPage(c.seg, pages.at(end)); ok {
			break
		}
		end++
	}
	read, err := c.t.readPageRun(ctx, c.seg, pages.refs(c.page, end))
	if err != nil {
		return nil, err
	}
	c.ahead = read[1:]
	return read[0], nil
}

// sliceCursor walks entries held in memory.
type sliceCursor struct {
	entries []indexEntry
	i       int
}

func (c *sliceCursor) peek(context.Context) (indexEntry, bool, error) {
	if c.i < len(c.entries) {
		return c.entries[c.i], true, nil
	}
	return indexEntry{}, false, nil
}

func (c *sliceCursor) advance() { c.i++ }

type cursorHeap struct {
	items []cursorItem
}

type cursorItem struct {
	e    indexEntry
	c    keyCursor
	rank int // the cursor's position: among equal keys the later (newer) cursor comes first
}

func (h *cursorHeap) Len() int { return len(h.items) }
func (h *cursorHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return a.e.Key < b.e.Key || (a.e.Key == b.e.Key && a.rank > b.rank)
}
func (h *cursorHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *cursorHeap) Push(x any)    { h.items = append(h.items, x.(cursorItem)) }
func (h *cursorHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}

// KeysAfter calls fn with every live row of version m whose key is greater than after, in key
// order, until fn returns false. Tombstone rows are included (flagged).
func (t *Table) KeysAfter(ctx context.Context, m *Manifest, after string, fn func(RowRef) bool) error {
	var cursors []keyCursor
	if m.KeyIndex != nil {
		for _, seg := range m.KeyIndex.Runs {
			f, err := t.footer(ctx, seg)
			if err != nil {
				return err
			}
			if f.pages.len() == 0 || f.lastKey <= after {
				continue
			}
			start := max(sort.Search(f.pages.len(), func(i int) bool { return f.pages.firstKey(i) > after })-1, 0)
			cursors = append(cursors, &runCursor{t: t, seg: seg, footer: f, page: start, after: after})
		}
	}
	var uncovered []indexEntry
	for _, f := range m.Fragments {
		if m.Covers(f.ID) || f.LiveRows() == 0 || f.MaxKey <= after {
			continue
		}
		t.metrics.UnindexedKeyScans.Inc()
		err := t.scanKeys(ctx, m, f, func(r keyRow) {
			if r.key > after {
				uncovered = append(uncovered, indexEntry{Key: r.key, Fragment: f.ID, Row: r.row, Seq: r.seq, Tombstone: r.tombstone})
			}
		})
		if err != nil {
			return err
		}
	}
	if len(uncovered) > 0 {
		slices.SortFunc(uncovered, func(a, b indexEntry) int { return cmp.Compare(a.Key, b.Key) })
		cursors = append(cursors, &sliceCursor{entries: uncovered})
	}
	return t.liveEntries(ctx, m, cursors, func(e indexEntry) bool {
		return fn(RowRef(e))
	})
}

// liveEntries merges sorted cursors (oldest first) by key and passes fn each key's live entry
// (in m) until fn returns false: the newest cursor's, should more than one be live (the table
// holds at most one live row per key, so in a table that is consistent none is).
func (t *Table) liveEntries(ctx context.Context, m *Manifest, cursors []keyCursor, fn func(indexEntry) bool) error {
	lm, err := t.newLiveMerge(ctx, m, cursors)
	if err != nil {
		return err
	}
	_, err = lm.emit(ctx, "", false, fn)
	return err
}

// liveMerge is liveEntries taken a key range at a time: emit passes on the live entries below a
// bound, and claim hands a key to an entry from outside the cursors (a compaction's rows, which
// arrive while the merge runs), so the cursors' entries of that key are dropped.
type liveMerge struct {
	h       cursorHeap
	lv      *liveness
	last    string // the last key emitted or claimed
	emitted bool   // last is set
}

// newLiveMerge opens the merge of cursors (oldest first), judging liveness in m.
func (t *Table) newLiveMerge(ctx context.Context, m *Manifest, cursors []keyCursor) (*liveMerge, error) {
	lm := &liveMerge{lv: newLiveness(t, m)}
	for i, c := range cursors {
		e, ok, err := c.peek(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			lm.h.items = append(lm.h.items, cursorItem{e, c, i})
		}
	}
	heap.Init(&lm.h)
	return lm, nil
}

// emit passes fn each key's live entry, in key order, for keys below bound (every key when not
// bounded), until fn returns false (then more is false).
func (lm *liveMerge) emit(ctx context.Context, bound string, bounded bool, fn func(indexEntry) bool) (more bool, err error) {
	h := &lm.h
	for h.Len() > 0 && (!bounded || h.items[0].e.Key < bound) {
		it := h.items[0]
		it.c.advance()
		next, ok, err := it.c.peek(ctx)
		if err != nil {
			return false, err
		}
		if ok {
			h.items[0].e = next
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
		if lm.emitted && it.e.Key == lm.last {
			continue // this key's live entry was already emitted
		}
		live, err := lm.lv.live(ctx, it.e)
		if err != nil {
			return false, err
		}
		if !live {
			continue
		}
		lm.last, lm.emitted = it.e.Key, true
		if !fn(it.e) {
			return false, nil
		}
	}
	return true, nil
}

// claim marks key as emitted from outside the cursors (the caller emitted every key below it
// first): the cursors' entries of key are skipped.
func (lm *liveMerge) claim(key string) { lm.last, lm.emitted = key, true }

// ReadRows returns the named columns of the given rows of version m, in the order given. Rows are
// read per fragment: a row group holding a few wanted rows by seeking to each, runs of adjacent
// row groups holding more by decoding them in one read. The caller releases the record.
func (t *Table) ReadRows(ctx context.Context, m *Manifest, refs []RowRef, columns []string) (arrow.RecordBatch, error) {
	return t.readRows(ctx, m, refs, columns, false)
}

// ReadRowsForSearch is ReadRows for a search's rows: the data pages its point reads decode stay
// in the process's object cache (fragment.Columns.CachePages), since the next search is likely
// to rank the same candidates.
func (t *Table) ReadRowsForSearch(ctx context.Context, m *Manifest, refs []RowRef, columns []string) (arrow.RecordBatch, error) {
	return t.readRows(ctx, m, refs, columns, true)
}

func (t *Table) readRows(ctx context.Context, m *Manifest, refs []RowRef, columns []string, cachePages bool) (arrow.RecordBatch, error) {
	names, err := userColumns(m, columns)
	if err != nil {
		return nil, err
	}
	type want struct {
		out int
		row int64
	}
	var fragments []uint64 // in order of first appearance: refs in a fragment's order need no take
	byFragment := map[uint64][]want{}
	for i, r := range refs {
		if _, ok := byFragment[r.Fragment]; !ok {
			fragments = append(fragments, r.Fragment)
		}
		byFragment[r.Fragment] = append(byFragment[r.Fragment], want{i, r.Row})
	}
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	order := make([]int64, len(refs)) // output position -> row in the concatenation of parts
	var base int64
	cols := fragment.Columns{Schema: m.Schema(), Names: names, CachePages: cachePages}
	for _, id := range fragments {
		wants := byFragment[id]
		f, ok := m.Fragment(id)
		if !ok {
			return nil, fmt.Errorf("table: version %d has no fragment %d", m.Version, id)
		}
		ft, err := t.reader.Footer(ctx, f.Ref())
		if err != nil {
			return nil, err
		}
		groups := map[int][]want{}
		for _, w := range wants {
			rg, off := ft.RowGroupOf(w.row)
			if rg < 0 {
				return nil, fmt.Errorf("table: fragment %s has no row %d", f.Path, w.row)
			}
			groups[rg] = append(groups[rg], want{w.out, off})
		}
		var decode []int // row groups decoded whole, ascending
		for _, rg := range slices.Sorted(maps.Keys(groups)) {
			ws := groups[rg]
			offsets := make([]int64, 0, len(ws)) // each distinct row once, ascending
			for _, w := range ws {
				offsets = append(offsets, w.row)
			}
			slices.Sort(offsets)
			offsets = slices.Compact(offsets)
			if len(offsets) > fragment.PointReadRows {
				first, n := offsets[0], offsets[len(offsets)-1]-offsets[0]+1
				if n*fragment.RangeReadShare > ft.RowsIn(rg) {
					decode = append(decode, rg)
					continue
				}
				// Rows of a small part of the row group (a listing's page): that run only.
				rec, err := t.reader.ReadRowRange(ctx, f.Ref(), cols, rg, first, n)
				if err != nil {
					return nil, err
				}
				parts = append(parts, rec)
				for _, w := range ws {
					order[w.out] = base + w.row - first
				}
				base += rec.NumRows()
				continue
			}
			// A few rows: seek to each (rec row i is offsets[i]).
			rec, err := t.reader.ReadRowsAt(ctx, f.Ref(), cols, rg, offsets)
			if err != nil {
				return nil, err
			}
			parts = append(parts, rec)
			for _, w := range ws {
				i, _ := slices.BinarySearch(offsets, w.row)
				order[w.out] = base + int64(i)
			}
			base += rec.NumRows()
		}
		// Runs of adjacent row groups decoded whole, one read each.
		for len(decode) > 0 {
			run := 1
			for run < len(decode) && decode[run] == decode[run-1]+1 {
				run++
			}
			rec, err := t.reader.ReadRowGroups(ctx, f.Ref(), cols, decode[:run])
			if err != nil {
				return nil, err
			}
			parts = append(parts, rec)
			first := ft.RowGroupStart(decode[0])
			for _, rg := range decode[:run] {
				for _, w := range groups[rg] {
					order[w.out] = base + ft.RowGroupStart(rg) - first + w.row
				}
			}
			base += rec.NumRows()
			decode = decode[run:]
		}
	}
	if identity(order, base) { // a single row, or rows already in order: no take
		return arrowutil.Concat(t.projected.Of(m.Schema(), names), parts, t.mem)
	}
	// The rows wanted, out of the parts read, in one copy (run by run where they come in runs).
	return arrowutil.TakeParts(ctx, t.mem, parts, order)
}

// identity reports whether order is 0, 1, ..., n-1.
func identity(order []int64, n int64) bool {
	if int64(len(order)) != n {
		return false
	}
	for i, o := range order {
		if o != int64(i) {
			return false
		}
	}
	return true
}
