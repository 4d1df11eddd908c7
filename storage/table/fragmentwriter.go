// Writing one fragment a row group at a time: merges and compactions gather (take) the rows of
// one row group, encode it and let it go, so a fragment being written costs one row group's rows
// and its encoded bytes (a chunk of them on stores that write in place: objectsink.go) — not
// all of its rows gathered into one batch first.
package table

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/strata-store/strata/storage/arrowutil"
)

// fragmentWriter encodes one output fragment a row group at a time.
type fragmentWriter struct {
	id        uint64
	keyColumn string
	path      string
	out       objectSink
	w         *pqarrow.FileWriter
	rows      int64
	minKey    string
	maxKey    string
	// kept are the indices of the columns the fragment stores, schema their fields (kept nil:
	// every column): a nullable column null in every row the fragment will hold is left out,
	// and readers take the columns a fragment lacks as null in every row.
	kept   []int
	schema *arrow.Schema
	// index takes each row's key-index entry as its row group is written (a compaction's run
	// merge); when nil, the entries are kept (entries) and returned by finish.
	index   func(indexEntry) error
	entries []indexEntry
	// uncompressed: the pages are written without compression (recorded in the Fragment).
	uncompressed bool
}

// newFragmentWriter starts fragment id in t's store, its layout chosen from first (its first row
// group), its pages compressed with codec. nullEverywhere[i] (nil: none) says column i is null in
// every row the fragment will hold: such a column, when nullable, is not stored. The caller ends
// it with finish or abort.
func newFragmentWriter(ctx context.Context, t *Table, id uint64, first arrow.RecordBatch, keyColumn string, codec compress.Compression, nullEverywhere []bool) (*fragmentWriter, error) {
	fw := &fragmentWriter{id: id, keyColumn: keyColumn, path: fragmentPath(id), schema: first.Schema(),
		uncompressed: codec == compress.Codecs.Uncompressed}
	fields := first.Schema().Fields()
	if leaveOutNullColumns && slices.Contains(nullEverywhere, true) {
		kept := make([]arrow.Field, 0, len(fields))
		for i, f := range fields {
			if !f.Nullable || i >= len(nullEverywhere) || !nullEverywhere[i] {
				fw.kept, kept = append(fw.kept, i), append(kept, f)
			}
		}
		md := first.Schema().Metadata()
		fw.schema = arrow.NewSchema(kept, &md)
	}
	out, err := newObjectSink(ctx, t, fw.path, -1)
	if err != nil {
		return nil, err
	}
	fw.out = out
	stored := fw.project(first)
	defer stored.Release()
	opts := fragmentWriterProperties(stored, t.mem, codec)
	// Each write is one row group (the merge cuts them), so the row-group bound only guards.
	opts = append(opts, parquet.WithMaxRowGroupLength(max(first.NumRows(), rowGroupRows)))
	w, err := pqarrow.NewFileWriter(fw.schema, out, parquet.NewWriterProperties(opts...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(t.mem)))
	if err != nil {
		out.abort()
		return nil, fmt.Errorf("table: encode fragment: %w", err)
	}
	fw.w = w
	return fw, nil
}

// project is rec as the fragment stores it: without the columns it leaves out (rec itself when
// it leaves out none). The caller releases the result.
func (fw *fragmentWriter) project(rec arrow.RecordBatch) arrow.RecordBatch {
	if fw.kept == nil {
		rec.Retain()
		return rec
	}
	cols := make([]arrow.Array, len(fw.kept))
	for i, c := range fw.kept {
		cols[i] = rec.Column(c)
	}
	return array.NewRecordBatch(fw.schema, cols, rec.NumRows())
}

// leaveOutNullColumns: fragments do not store the nullable columns null in every one of their
// rows. Only tests turn it off, to write fragments as earlier releases did (every column of the
// schema), which readers still take.
var leaveOutNullColumns = true

// nullInEveryPart says, for each column of parts (one schema), whether it is null in every row
// of every part (so in any rows taken from them).
func nullInEveryPart(parts []arrow.RecordBatch) []bool {
	if len(parts) == 0 {
		return nil
	}
	nulls := make([]bool, parts[0].NumCols())
	for c := range nulls {
		nulls[c] = true
		for _, p := range parts {
			if col := p.Column(c); col.NullN() != col.Len() {
				nulls[c] = false
				break
			}
		}
	}
	return nulls
}

// size is the fragment's encoded bytes so far.
func (fw *fragmentWriter) size() int64 { return fw.out.size() }

// reserve makes room for n more bytes of output when the fragment is encoded into memory.
func (fw *fragmentWriter) reserve(n int) { fw.out.reserve(n) }

// abort ends an unfinished fragment: frees its encoder and deletes what was written of it.
func (fw *fragmentWriter) abort() {
	_ = fw.w.Close()
	fw.out.abort()
}

// write appends rec (rows in key order, after every row written before; every column of the
// schema the writer was started with) as a row group.
func (fw *fragmentWriter) write(rec arrow.RecordBatch) error {
	stored := fw.project(rec)
	err := fw.w.Write(stored)
	stored.Release()
	if err != nil {
		return fmt.Errorf("table: encode fragment: %w", err)
	}
	if err := fw.out.failed(); err != nil {
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

// finish closes the fragment and stores it. A returned Fragment with a Path was written (even
// when err says the store's answer was lost).
func (fw *fragmentWriter) finish(ctx context.Context) (Fragment, []indexEntry, error) {
	if err := fw.w.Close(); err != nil {
		fw.out.abort()
		return Fragment{}, nil, fmt.Errorf("table: encode fragment: %w", err)
	}
	f := Fragment{ID: fw.id, Path: fw.path, Rows: fw.rows, Bytes: fw.out.size(), MinKey: fw.minKey, MaxKey: fw.maxKey,
		Uncompressed: fw.uncompressed}
	if err := fw.out.store(ctx); err != nil {
		return f, nil, err
	}
	return f, fw.entries, nil
}

// writeRowsAsFragment writes rows of parts (positions in the parts laid end to end, in key
// order) as new fragment id, gathering one row group at a time. The first rows gathered choose
// the layout (rowGroupLength of them: their buffers hold only them), and the output buffer is
// sized for the first row group from its Arrow bytes, then for the rest from that group's
// encoded bytes per row; its pages are compressed with codec. A returned Fragment with a Path
// was written (even when err says the store's answer was lost).
func (t *Table) writeRowsAsFragment(ctx context.Context, parts []arrow.RecordBatch, rows []int64, id uint64, keyColumn string, codec compress.Compression) (Fragment, []indexEntry, error) {
	// The first sample is about a row group, estimated from the parts' bytes per row (their
	// buffers may be shared with other rows, so the estimate errs small: wide rows never make a
	// sample of rowGroupRows of them); when the rows gathered say a row group holds more, the
	// sample is gathered again at that length.
	var partBytes, partRows int64
	for _, p := range parts {
		partBytes, partRows = partBytes+batchBytes(p), partRows+p.NumRows()
	}
	sample := min(int64(len(rows)), rowGroupRowsFor(partBytes, partRows))
	first, err := arrowutil.TakeParts(ctx, t.mem, parts, rows[:sample])
	if err != nil {
		return Fragment{}, nil, err
	}
	groupN := rowGroupLength(first)
	if groupN > sample && sample < int64(len(rows)) {
		first.Release()
		if first, err = arrowutil.TakeParts(ctx, t.mem, parts, rows[:min(int64(len(rows)), groupN)]); err != nil {
			return Fragment{}, nil, err
		}
	}
	fw, err := newFragmentWriter(ctx, t, id, first, keyColumn, codec, nullInEveryPart(parts))
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
	fw.reserve(int(batchBytes(first)*min(groupN, fromFirst)/max(first.NumRows(), 1)) + 64<<10)
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
