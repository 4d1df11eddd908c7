// A table's output fragment: written a row group at a time through fragment.Writer (merges and
// compactions gather the rows of one row group, write it and let it go), each row's key-index
// entry derived as its row group is written.
package table

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/fragment"
)

// fragmentWriter writes one output fragment through a fragment.Writer and derives, from each
// row group it writes, the rows' key-index entries and the fragment's key range.
type fragmentWriter struct {
	t         *Table
	id        uint64
	keyColumn string
	w         *fragment.Writer
	rows      int64
	minKey    string
	maxKey    string
	// index takes each row's key-index entry as its row group is written (a compaction's run
	// merge); when nil, the entries are kept (entries) and returned by finish.
	index   func(indexEntry) error
	entries []indexEntry
	// uncompressed: the pages are written without compression (recorded in the Fragment).
	uncompressed bool
}

// leaveOutNullColumns and writePageIndex: fragments do not store the nullable columns null in
// every one of their rows, and carry a page index. Only tests turn them off, to write fragments
// as earlier releases did, which readers still take.
var leaveOutNullColumns, writePageIndex = true, true

// newFragmentWriter starts fragment id in t's store, its layout chosen from first (its first row
// group), its pages compressed with codec. nullEverywhere[i] (nil: none) says column i is null in
// every row the fragment will hold: such a column, when nullable, is not stored. The caller ends
// it with finish or abort.
func (t *Table) newFragmentWriter(ctx context.Context, id uint64, first arrow.RecordBatch, keyColumn string, codec compress.Compression, nullEverywhere []bool) (*fragmentWriter, error) {
	w, err := fragment.NewWriter(ctx, t.store, fragmentPath(id), first, fragment.WriterOptions{Mem: t.mem, Codec: codec,
		NullEverywhere: nullEverywhere, StoreEveryColumn: !leaveOutNullColumns, NoPageIndex: !writePageIndex})
	if err != nil {
		return nil, err
	}
	return &fragmentWriter{t: t, id: id, keyColumn: keyColumn, w: w, uncompressed: codec == compress.Codecs.Uncompressed}, nil
}

// size is the fragment's encoded bytes so far.
func (fw *fragmentWriter) size() int64 { return fw.w.Size() }

// reserve makes room for n more bytes of output when the fragment is encoded into memory.
func (fw *fragmentWriter) reserve(n int) { fw.w.Reserve(n) }

// abort ends an unfinished fragment: frees its encoder and deletes what was written of it.
func (fw *fragmentWriter) abort() {
	if fw.w.Abort() {
		fw.t.deleteFiles([]string{fw.w.Path()})
	}
}

// write appends rec (rows in key order, after every row written before; every column of the
// schema the writer was started with) as a row group.
func (fw *fragmentWriter) write(rec arrow.RecordBatch) error {
	if err := fw.w.Write(rec); err != nil {
		return err
	}
	s := rec.Schema()
	keys := rec.Column(s.FieldIndices(fw.keyColumn)[0]).(*array.String)
	seqs := rec.Column(s.FieldIndices(SeqColumn)[0]).(*array.Uint64)
	tombs := rec.Column(s.FieldIndices(TombstoneColumn)[0]).(*array.Boolean)
	for i := range keys.Len() {
		// Cloned: the index entries outlive the batch (a key would otherwise pin its buffers).
		key := strings.Clone(keys.Value(i))
		e := indexEntry{Key: key, Fragment: fw.id, Row: fw.rows + int64(i), Seq: seqs.Value(i), Tombstone: tombs.Value(i)}
		if fw.index == nil {
			fw.entries = append(fw.entries, e)
		} else if err := fw.index(e); err != nil {
			return err
		}
		if fw.rows == 0 && i == 0 {
			fw.minKey = key
		}
		fw.maxKey = key
	}
	fw.rows += rec.NumRows()
	return nil
}

// finish closes the fragment and stores it. On error the returned Fragment's Path may name an
// object (a streamed one, or a put whose answer was lost): the caller deletes it.
func (fw *fragmentWriter) finish(ctx context.Context) (Fragment, []indexEntry, error) {
	size, err := fw.w.Finish(ctx)
	f := Fragment{ID: fw.id, Path: fw.w.Path(), Rows: fw.rows, Bytes: size, MinKey: fw.minKey, MaxKey: fw.maxKey,
		Uncompressed: fw.uncompressed}
	if err != nil {
		return f, nil, err
	}
	return f, fw.entries, nil
}

// writeRowsAsFragment writes rows of parts (positions in the parts laid end to end, in key
// order) as new fragment id, gathering one row group at a time. The first rows gathered choose
// the layout (fragment.RowGroupLength of them: their buffers hold only them), and the output buffer is
// sized for the first row group from its Arrow bytes, then for the rest from that group's
// encoded bytes per row; its pages are compressed with codec. A returned Fragment with a Path
// was written (even when err says the store's answer was lost).
func (t *Table) writeRowsAsFragment(ctx context.Context, parts []arrow.RecordBatch, rows []int64, id uint64, keyColumn string, codec compress.Compression) (Fragment, []indexEntry, error) {
	// The first sample is about a row group, estimated from the parts' bytes per row (their
	// buffers may be shared with other rows, so the estimate errs small: wide rows never make a
	// sample of fragment.RowGroupRows of them); when the rows gathered say a row group holds more, the
	// sample is gathered again at that length.
	var partBytes, partRows int64
	for _, p := range parts {
		partBytes, partRows = partBytes+fragment.BatchBytes(p), partRows+p.NumRows()
	}
	sample := min(int64(len(rows)), fragment.RowGroupRowsFor(partBytes, partRows))
	first, err := arrowutil.TakeParts(ctx, t.mem, parts, rows[:sample])
	if err != nil {
		return Fragment{}, nil, err
	}
	groupN := fragment.RowGroupLength(first)
	if groupN > sample && sample < int64(len(rows)) {
		first.Release()
		if first, err = arrowutil.TakeParts(ctx, t.mem, parts, rows[:min(int64(len(rows)), groupN)]); err != nil {
			return Fragment{}, nil, err
		}
	}
	fw, err := t.newFragmentWriter(ctx, id, first, keyColumn, codec, fragment.NullInEveryPart(parts))
	if err != nil {
		first.Release()
		return Fragment{}, nil, err
	}
	defer func() {
		if fw != nil { // an error left the fragment unfinished: free its encoder, keep nothing
			fw.abort()
		}
	}()
	// Row groups of first are written from it: whole ones only, unless it holds every row (its
	// tail is taken again as the start of the next row group, so no group but the last is short).
	fromFirst := first.NumRows()
	if fromFirst < int64(len(rows)) && fromFirst >= groupN {
		fromFirst -= fromFirst % groupN
	}
	// The first row group encodes into at most about its Arrow bytes (Parquet pages hold the
	// values, compressed, without Arrow's offsets and padding): room for that up front, so the
	// buffer does not double its way there (a one-group fragment would keep up to twice its size).
	fw.reserve(int(fragment.BatchBytes(first)*min(groupN, fromFirst)/max(first.NumRows(), 1)) + 64<<10)
	for at := int64(0); at < fromFirst; at += groupN {
		group := first.NewSlice(at, min(at+groupN, fromFirst))
		err = fw.write(group)
		group.Release()
		if err != nil {
			first.Release()
			return Fragment{}, nil, err
		}
		if at == 0 {
			if left := int64(len(rows)) - fw.rows; left > 0 {
				// The rest encodes about like the first row group: one buffer for all of it
				// (and the footer), not doublings past it that copy and touch twice the bytes.
				perRow := float64(fw.size()) / float64(fw.rows)
				fw.reserve(int(perRow*float64(left)*17/16) + 64<<10)
			}
		}
	}
	first.Release()
	for start := fw.rows; start < int64(len(rows)); start += groupN {
		group, err := arrowutil.TakeParts(ctx, t.mem, parts, rows[start:min(int64(len(rows)), start+groupN)])
		if err != nil {
			return Fragment{}, nil, err
		}
		err = fw.write(group)
		group.Release()
		if err != nil {
			return Fragment{}, nil, err
		}
	}
	w := fw
	fw = nil
	return w.finish(ctx)
}
