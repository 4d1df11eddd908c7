// Compaction's merge: the source fragments' live rows (tombstones included: they must outlive
// the rows they delete) in key order, as output fragments of bounded size. Every fragment is
// sorted by key and a key is live in at most one fragment of a version, so the sources are
// merged batch by batch (a heap over one cursor per source) and the output is encoded as it is
// produced. Memory stays, per source, one decoded batch of about fragment.SequenceBatchBytes and
// the encoded pages it came from (fragment.Sequence), plus one output row group and the output
// fragment being encoded — never the sources whole, whatever their size (reading them whole made
// a worker's memory grow with its tables), and not a decoded row group per source either (row
// groups are sized for scans).
package table

import (
	"container/heap"
	"context"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/fragment"
	"github.com/strata-store/strata/storage/objstore"
)

// sourceCursor walks one source fragment's live rows in key order: its rows come a batch of
// about fragment.SequenceBatchBytes at a time from a fragment.Sequence, the deleted ones are
// dropped, and the live ones are kept as slices until the merge has taken them.
type sourceCursor struct {
	t      *Table
	f      Fragment
	seq    *fragment.Sequence
	del    *roaring.Bitmap
	schema *arrow.Schema
	names  []string
	keyCol string

	pending []arrow.RecordBatch // live slices of the batch decoded last, after cur
	cur     arrow.RecordBatch
	keys    *array.String
	row     int
	base    int64 // cur's first row among the output's gathered parts; -1: not gathered
}

func (t *Table) newSourceCursor(ctx context.Context, m *Manifest, f Fragment, names []string) (*sourceCursor, error) {
	del, err := t.deletions(ctx, f)
	if err != nil {
		return nil, err
	}
	seq, err := t.reader.NewSequence(ctx, f.Ref(), fragment.Columns{Schema: m.Schema(), Names: names})
	if err != nil {
		return nil, err
	}
	return &sourceCursor{t: t, f: f, seq: seq, del: del, schema: m.Schema(), names: names, keyCol: m.KeyColumn, base: -1}, nil
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
		batch, offset, err := c.seq.Next(ctx)
		if err != nil || batch == nil {
			return false, err
		}
		err = c.emit(ctx, batch, offset)
		batch.Release()
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// emit keeps the live rows of batch (whose first row is fragment row offset) as pending slices.
func (c *sourceCursor) emit(ctx context.Context, batch arrow.RecordBatch, offset int64) error {
	return c.t.emitBatch(ctx, batch, c.schema, c.names, len(c.names), offset, c.del, false, func(b arrow.RecordBatch) error {
		b.Retain()
		c.pending = append(c.pending, b)
		return nil
	})
}

func (c *sourceCursor) key() string { return c.keys.Value(c.row) }

func (c *sourceCursor) release() {
	c.seq.Release()
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
// cannot write in place; a chunk when it can: objstore.Sink); per source the encoded bytes it
// holds (its open row group's, or on a local store a run's pages, which are fewer: either is
// at most about fragment.RowGroupBytes, and never more than the source), the buffers
// column readers hold between batches of a fragment without a page index (a StreamReadBuffer
// per column, at most half a row group or the source's bytes) and a decoded run twice
// (SequenceBatchBytes: the run and the output's take of it); the output row group (RowGroupBytes,
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
	readers := min(int64(len(m.Fields))*fragment.StreamReadBuffer, fragment.RowGroupBytes/2)
	for _, id := range plan.Sources {
		if f, ok := m.Fragment(id); ok {
			bytes += f.Bytes
			rows += f.LiveRows()
			entryBytes += indexEntryBytes(f)
			sourcesHold += min(f.Bytes, fragment.RowGroupBytes) + min(readers, f.Bytes) + 2*fragment.SequenceBatchBytes
		}
	}
	inPlace := objstore.WritesInPlace(t.store)
	output := min(bytes, cfg.TargetBytesPerFragment) * 17 / 16
	if inPlace {
		output = objstore.SinkChunkBytes
	}
	index := t.IndexRunFootprint(m, rows) // with tail runs to take in
	if m.KeyIndex != nil && index == 0 {  // the new run alone
		index = rows*runFooterBytesPerEntry + entryBytes/entriesPerPage + objstore.SinkChunkBytes
	}
	if m.KeyIndex != nil && !inPlace {
		index += entryBytes // the new entries' share of a run encoded whole
	}
	return output + sourcesHold + 2*fragment.RowGroupBytes + index
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
		nullEverywhere[i] = !slices.ContainsFunc(h, func(c *sourceCursor) bool { return !c.seq.Footer().NullEverywhere(name) })
	}

	var sourceBytes int64
	for _, f := range sources {
		sourceBytes += f.Bytes
	}
	var written int64 // bytes of the output fragments finished so far
	// Output row groups are sized like a merge's (fragment.RowGroupLength), from the sources'
	// uncompressed bytes per row (the cursors' batches are slices: their buffers' sizes say
	// nothing about their rows).
	var rawBytes, rawRows int64
	for _, c := range h {
		rawBytes += c.seq.Footer().UncompressedBytes()
		rawRows += c.seq.Footer().Rows()
	}
	groupN := fragment.RowGroupRowsFor(rawBytes, rawRows)
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
			if fw, err = t.newFragmentWriter(ctx, id, rec, base.KeyColumn, fragment.Codec, nullEverywhere); err != nil {
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
