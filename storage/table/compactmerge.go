// Compaction's merge: the source fragments' live rows (tombstones included: they must outlive
// the rows they delete) in key order, as output fragments of bounded size. Every fragment is
// sorted by key and a key is live in at most one fragment of a version, so the sources are
// merged batch by batch (a heap over one cursor per source) and the output is encoded as it is
// produced. Memory stays, per source, one decoded batch of about sourceBatchBytes and the encoded
// pages it came from (a run's pages on a local store, the row group's elsewhere: sourceCursor),
// plus one output row group and the output fragment being encoded — never
// the sources whole, whatever their size (reading them whole made a worker's memory grow with
// its tables), and not a decoded row group per source either (row groups are sized for scans).
package table

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/objstore"
)

// sourceBatchBytes is about how much decoded Arrow data a compaction holds per source at once:
// a source's row group is decoded in batches of about this size.
const sourceBatchBytes = 256 << 10

// footerBatchRows is how many rows of row group rg hold about sourceBatchBytes by its footer's
// uncompressed size (which understates dictionary-encoded columns); ok=false when the footer
// gives no size.
func footerBatchRows(rg *metadata.RowGroupMetaData) (n int64, ok bool) {
	rows, bytes := rg.NumRows(), rg.TotalByteSize()
	if rows <= 0 || bytes <= 0 {
		return 0, false
	}
	return min(rows, sourceBatchBytes*rows/bytes), true
}

// sourceBatchRows is the batch length that decodes about sourceBatchBytes of row group rg
// through pqarrow (fragments without a page index).
func sourceBatchRows(rg *metadata.RowGroupMetaData) int64 {
	n, ok := footerBatchRows(rg)
	if !ok {
		return rowGroupRows
	}
	return max(minRowGroupRows, n)
}

// sourceCursor walks one source fragment's live rows in key order, a batch at a time. It owns
// what it holds of the row group it is in and the batches it decoded; release frees them.
//
// A row group with a page index (every fragment this release writes) is decoded a run of rows at
// a time straight from its pages. On a store that reads into the caller's memory (a local
// filesystem) each run fetches only the pages holding it, into pooled buffers given back when
// the run is decoded, so between runs the cursor holds the rows decoded last and nothing
// encoded; elsewhere (an object store, where every range is a request), and when a nested
// column with values needs pqarrow, the row group's encoded bytes are fetched whole when it is
// opened and held until its last run. Either way no column readers are held. Each run is
// sized to about sourceBatchBytes by the bytes per row the previous run measured, since a row
// group's sizes in the footer say little about its decoded rows (a dictionary-encoded column of
// long repeated values takes a few bytes there and its full width in Arrow). Older fragments
// stream through pqarrow's column readers, in batches sized from the footer.
type sourceCursor struct {
	t      *Table
	f      Fragment
	ft     *footer
	del    *roaring.Bitmap
	schema *arrow.Schema
	names  []string
	keyCol string
	next   int // the next row group to open

	// The open row group read from its pages (pages != nil): its encoded bytes, where its pages
	// are, which columns the page path reads (flat) and which pqarrow (nested, with values), the
	// next row to decode and the rows it has.
	pages        *rowGroupPages
	window       readWindow
	rg           int
	flat, nested []string
	at, rgRows   int64
	rowBytes     int64 // decoded bytes per row of the last run (0: none decoded yet)

	// The open row group streamed through pqarrow (older fragments): its reader, its batches,
	// and the fragment row of the next batch.
	fr     *pqarrow.FileReader
	rr     pqarrow.RecordReader
	offset int64

	pending []arrow.RecordBatch // live slices of the batch decoded last, after cur
	cur     arrow.RecordBatch
	keys    *array.String
	row     int
	base    int64 // cur's first row among the output's gathered parts; -1: not gathered
}

// firstRunRows caps a row group's first run from its pages, decoded before its width is
// measured.
const firstRunRows = minRowGroupRows

func (t *Table) newSourceCursor(ctx context.Context, m *Manifest, f Fragment, names []string) (*sourceCursor, error) {
	del, err := t.deletions(ctx, f)
	if err != nil {
		return nil, err
	}
	ft, err := t.fragmentFooter(ctx, f)
	if err != nil {
		return nil, err
	}
	return &sourceCursor{t: t, f: f, ft: ft, del: del, schema: m.Schema(), names: names, keyCol: m.KeyColumn, base: -1}, nil
}

// fill makes cur hold an unread row; false when the source is exhausted.
func (c *sourceCursor) fill(ctx context.Context) (bool, error) {
	for c.cur == nil || c.row >= int(c.cur.NumRows()) {
		if c.cur != nil {
			c.cur.Release()
			c.cur, c.keys, c.base = nil, nil, -1
		}
		if len(c.pending) > 0 {
			c.cur, c.pending = c.pending[0], c.pending[1:]
			c.keys = c.cur.Column(c.cur.Schema().FieldIndices(c.keyCol)[0]).(*array.String)
			c.row = 0
			continue
		}
		if c.pages != nil {
			if err := c.decodeRun(ctx); err != nil {
				return false, err
			}
			continue
		}
		if c.rr != nil {
			if err := c.decodeBatch(ctx); err != nil {
				return false, err
			}
			continue
		}
		if c.next >= c.ft.md.NumRowGroups() {
			return false, nil
		}
		rg := c.next
		c.next++
		if err := c.openRowGroup(ctx, rg); err != nil {
			return false, err
		}
	}
	return true, nil
}

// openRowGroup starts reading row group rg: its rows are decoded a run at a time by decodeRun
// (from its pages: fetched per run, or the row group's encoded bytes fetched here at once; see
// sourceCursor) or a batch at a time by decodeBatch (pqarrow, for fragments without a page
// index).
func (c *sourceCursor) openRowGroup(ctx context.Context, rg int) error {
	pages, err := c.t.rowGroupPagesOf(ctx, c.f, c.ft.md, rg)
	if err != nil {
		return err
	}
	if pages == nil {
		return c.streamRowGroup(ctx, rg)
	}
	if c.ft.rowStarts[rg+1] == c.ft.rowStarts[rg] {
		return nil // no rows: nothing to decode
	}
	c.pages, c.rg, c.at, c.rgRows = pages, rg, 0, c.ft.rowStarts[rg+1]-c.ft.rowStarts[rg]
	c.flat, c.nested = splitPageColumns(c.schema, c.ft, pages, c.names)
	if len(c.nested) == 0 && objstore.ReadsInto(c.t.store) {
		return nil // each run fetches its own pages (decodeRun)
	}
	window, err := c.t.rowGroupWindow(ctx, c.f, c.ft.md, []int{rg})
	if err != nil {
		return err
	}
	c.window = window
	return nil
}

// runRows is how many rows the next run of the open row group decodes: about sourceBatchBytes
// at the bytes per row the source's last run measured (its first run: at most firstRunRows),
// the rest of the row group at most.
func (c *sourceCursor) runRows() int64 {
	left := c.rgRows - c.at
	if c.rowBytes == 0 {
		// No width measured yet: firstRunRows, fewer when the footer says the rows are wide (it
		// understates only dictionary-encoded columns).
		n := int64(firstRunRows)
		if est, ok := footerBatchRows(c.ft.md.RowGroup(c.rg)); ok {
			n = min(n, max(1, est))
		}
		return min(left, n)
	}
	return min(left, max(1, sourceBatchBytes/c.rowBytes))
}

// decodeRun decodes the open row group's next run of rows from its pages into pending, and
// closes the row group after its last run.
func (c *sourceCursor) decodeRun(ctx context.Context) error {
	runs := []rowRun{{c.at, c.runRows()}}
	rec, err := c.t.readRunsInSpan(ctx, c.f, c.window, c.pages, c.schema, c.names, c.flat, c.nested, c.rg, runs)
	if err != nil {
		return fmt.Errorf("table: read fragment %s: %w", c.f.Path, err)
	}
	defer rec.Release()
	n := runs[0].n
	c.rowBytes = max(1, decodedBytes(rec)/n)
	offset := c.ft.rowStarts[c.rg] + c.at
	if c.at += n; c.at >= c.rgRows {
		c.closeRowGroup()
	}
	return c.emit(ctx, rec, offset)
}

// decodedBytes is the size of the buffers of rec's columns that hold values (columns of nulls
// only may share their buffers with other records).
func decodedBytes(rec arrow.RecordBatch) int64 {
	var size int64
	for _, col := range rec.Columns() {
		if col.NullN() < col.Len() {
			size += int64(col.Data().SizeInBytes())
		}
	}
	return size
}

// streamRowGroup starts reading row group rg of a fragment without a page index: its encoded
// bytes are fetched at once, its columns decoded a batch at a time by decodeBatch.
func (c *sourceCursor) streamRowGroup(ctx context.Context, rg int) error {
	fr, err := c.t.openFragment(ctx, c.f, accessStream, nil, rg)
	if err != nil {
		return err
	}
	read := storedColumns(fr, c.names, []int{rg})
	leaves, _ := leafColumns(fr, read)
	if len(leaves) == 0 { // every column null here: no decoder to run
		fr.ParquetReader().Close()
		n := c.ft.md.RowGroup(rg).NumRows()
		rec, err := c.t.layoutColumns(nil, n, c.schema, c.names)
		if err != nil {
			return err
		}
		defer rec.Release()
		return c.emit(ctx, rec, c.ft.rowStarts[rg])
	}
	fr.Props.Parallel = true // columns decode concurrently
	fr.Props.BatchSize = sourceBatchRows(c.ft.md.RowGroup(rg))
	rr, err := fr.GetRecordReader(ctx, leaves, []int{rg})
	if err != nil {
		fr.ParquetReader().Close()
		return fmt.Errorf("table: read fragment %s: %w", c.f.Path, err)
	}
	c.fr, c.rr, c.offset = fr, rr, c.ft.rowStarts[rg]
	return nil
}

// decodeBatch decodes the open row group's next batch into pending, or closes the row group
// when it has none left.
func (c *sourceCursor) decodeBatch(ctx context.Context) error {
	if !c.rr.Next() {
		err := c.rr.Err()
		c.closeRowGroup()
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("table: read fragment %s: %w", c.f.Path, err)
		}
		return nil
	}
	batch := c.rr.RecordBatch()
	offset := c.offset
	c.offset += batch.NumRows()
	return c.emit(ctx, batch, offset)
}

// emit keeps the live rows of batch (whose first row is fragment row offset) as pending slices.
func (c *sourceCursor) emit(ctx context.Context, batch arrow.RecordBatch, offset int64) error {
	return c.t.emitBatch(ctx, batch, c.schema, c.names, len(c.names), offset, c.del, false, func(b arrow.RecordBatch) error {
		b.Retain()
		c.pending = append(c.pending, b)
		return nil
	})
}

func (c *sourceCursor) closeRowGroup() {
	c.pages, c.window, c.flat, c.nested = nil, readWindow{}, nil, nil
	if c.rr != nil {
		c.rr.Release()
		c.fr.ParquetReader().Close()
		c.fr, c.rr = nil, nil
	}
}

func (c *sourceCursor) key() string { return c.keys.Value(c.row) }

func (c *sourceCursor) release() {
	c.closeRowGroup()
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	for _, p := range c.pending {
		p.Release()
	}
	c.pending = nil
}

type sourceHeap []*sourceCursor

func (h sourceHeap) Len() int           { return len(h) }
func (h sourceHeap) Less(i, j int) bool { return h[i].key() < h[j].key() }
func (h sourceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *sourceHeap) Push(x any)        { *h = append(*h, x.(*sourceCursor)) }
func (h *sourceHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// CompactionFootprint estimates the memory executing plan on m in t holds at once: the output
// fragment's encoding (what is left of the sources, at most the byte target, when the store
// cannot write in place; a chunk when it can: objectsink.go); per source the encoded bytes it
// holds (its open row group's, or on a local store a run's pages, which are fewer: either is
// at most about rowGroupBytes, and never more than the source), the buffers
// column readers hold between batches of a fragment without a page index (a streamReadBuffer
// per column, at most half a row group or the source's bytes) and a decoded run twice
// (sourceBatchBytes: the run and the output's take of it); the output row group (rowGroupBytes,
// twice for encoding); and the key-index run its rows' entries stream into (runMerge: the
// tail runs it takes in, a read window each, and the run's footer; the run a chunk at a time
// where the store writes in place, else whole).
//
// A budget reservation is what the memory governor lets the heap grow by while it is held, so
// the estimate follows each source's size: a compaction of 32 small fragments reserving 3.5 MiB
// for each would let the heap grow by ten times what it decodes.
func (t *Table) CompactionFootprint(m *Manifest, plan CompactionPlan) int64 {
	cfg := plan.Config.withDefaults()
	var bytes, rows, entryBytes, sourcesHold int64
	readers := min(int64(len(m.Fields))*streamReadBuffer, rowGroupBytes/2)
	for _, id := range plan.Sources {
		if f, ok := m.Fragment(id); ok {
			bytes += f.Bytes
			rows += f.LiveRows()
			entryBytes += indexEntryBytes(f)
			sourcesHold += min(f.Bytes, rowGroupBytes) + min(readers, f.Bytes) + 2*sourceBatchBytes
		}
	}
	inPlace := objstore.WritesInPlace(t.store)
	output := min(bytes, cfg.TargetBytesPerFragment) * 17 / 16
	if inPlace {
		output = objectStreamChunk
	}
	index := t.IndexRunFootprint(m, rows) // with tail runs to take in
	if m.KeyIndex != nil && index == 0 {  // the new run alone
		index = rows*runFooterBytesPerEntry + entryBytes/entriesPerPage + objectStreamChunk
	}
	if m.KeyIndex != nil && !inPlace {
		index += entryBytes // the new entries' share of a run encoded whole
	}
	return output + sourcesHold + 2*rowGroupBytes + index
}

// indexEntryBytes estimates the encoded key-index entries of f's live rows: per row its key (the
// mean of f's smallest and largest) and ~16 bytes of varints and flag.
func indexEntryBytes(f Fragment) int64 {
	return f.LiveRows() * (int64(len(f.MinKey)+len(f.MaxKey))/2 + 16)
}

// compactionOutput is what a compaction wrote: its fragments (uploaded) and the objects to
// delete if the commit fails.
type compactionOutput struct {
	added   []Fragment
	written []string
	rows    int64
}

// mergeSources writes the sources' live rows in key order as fragments of at most
// cfg.TargetRowsPerFragment rows and about cfg.TargetBytesPerFragment encoded bytes, passing
// index each row's key-index entry, in key order, as its row group is written. On error, what
// it wrote is in out.written.
func (t *Table) mergeSources(ctx context.Context, base *Manifest, sources []Fragment, cfg CompactionConfig, index func(indexEntry) error) (out compactionOutput, err error) {
	schema := base.Schema()
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	var h sourceHeap
	defer func() {
		for _, c := range h {
			c.release()
		}
	}()
	for _, f := range sources {
		c, err := t.newSourceCursor(ctx, base, f, names)
		if err != nil {
			return out, err
		}
		ok, err := c.fill(ctx)
		if err != nil || !ok {
			c.release()
			if err != nil {
				return out, err
			}
			continue
		}
		h = append(h, c)
	}
	heap.Init(&h)
	// A column null in every row of every source is null in every output row: the output
	// fragments do not store it.
	nullEverywhere := make([]bool, len(names))
	for i, name := range names {
		nullEverywhere[i] = !slices.ContainsFunc(h, func(c *sourceCursor) bool { return !c.ft.nullEverywhere(name) })
	}

	var sourceBytes int64
	for _, f := range sources {
		sourceBytes += f.Bytes
	}
	var written int64 // bytes of the output fragments finished so far
	// Output row groups are sized like a merge's (rowGroupLength), from the sources'
	// uncompressed bytes per row (the cursors' batches are slices: their buffers' sizes say
	// nothing about their rows).
	var rawBytes, rawRows int64
	for _, c := range h {
		for i := range c.ft.md.NumRowGroups() {
			rawBytes += c.ft.md.RowGroup(i).TotalByteSize()
		}
		rawRows += c.ft.rowStarts[len(c.ft.rowStarts)-1]
	}
	groupN := rowGroupRowsFor(rawBytes, rawRows)
	var (
		fw      *fragmentWriter
		parts   []arrow.RecordBatch // the batches the next output row group takes rows from
		indices []int64             // its rows, as positions in parts concatenated
		total   int64               // rows in parts
	)
	releaseParts := func() {
		for _, p := range parts {
			p.Release()
		}
		parts, indices, total = parts[:0], indices[:0], 0
		for _, c := range h {
			c.base = -1
		}
	}
	defer releaseParts()
	defer func() {
		if fw != nil { // an error left a fragment unfinished: free its encoder, keep nothing
			fw.abort()
		}
	}()
	closeFragment := func() error {
		if fw == nil {
			return nil
		}
		f, _, err := fw.finish(ctx)
		fw = nil
		if f.Path != "" {
			out.written = append(out.written, f.Path)
		}
		if err != nil {
			return err
		}
		out.added = append(out.added, f)
		written += f.Bytes
		return nil
	}
	flushGroup := func() error {
		if len(indices) == 0 {
			return nil
		}
		rec, err := arrowutil.TakeParts(ctx, t.mem, parts, indices)
		releaseParts()
		if err != nil {
			return err
		}
		defer rec.Release()
		if fw == nil {
			id := base.newFragmentID()
			for slices.ContainsFunc(out.added, func(f Fragment) bool { return f.ID == id }) {
				id = base.newFragmentID()
			}
			if fw, err = newFragmentWriter(ctx, t, id, rec, base.KeyColumn, fragmentCodec, nullEverywhere); err != nil {
				return err
			}
			fw.index = index
			// The output is at most about what is left of the sources (their rows, encoded
			// alike, less the deleted ones): one buffer of that size and a margin of a sixteenth
			// for the footer, not one doubling past it (three times the size at once while the
			// last doubling copies).
			left := min(max(0, sourceBytes-written), cfg.TargetBytesPerFragment)
			fw.reserve(int(left*17/16 + 64<<10))
		}
		if err := fw.write(rec); err != nil {
			return err
		}
		out.rows += rec.NumRows()
		if fw.rows >= cfg.TargetRowsPerFragment || fw.size() >= cfg.TargetBytesPerFragment {
			return closeFragment()
		}
		return nil
	}

	for h.Len() > 0 {
		c := h[0]
		if c.base < 0 {
			c.cur.Retain()
			parts = append(parts, c.cur)
			c.base = total
			total += c.cur.NumRows()
		}
		indices = append(indices, c.base+int64(c.row))
		c.row++
		ok, err := c.fill(ctx)
		if err != nil {
			return out, err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
			c.release()
		}
		// An output row group ends at groupN rows, or where the fragment reaches its row target.
		inFragment := int64(len(indices))
		if fw != nil {
			inFragment += fw.rows
		}
		if int64(len(indices)) >= groupN || inFragment >= cfg.TargetRowsPerFragment {
			if err := flushGroup(); err != nil {
				return out, err
			}
		}
	}
	if err := flushGroup(); err != nil {
		return out, err
	}
	return out, closeFragment()
}
