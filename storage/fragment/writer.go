// Writing one fragment a row group at a time: the caller gathers (takes) the rows of one row
// group, writes it and lets it go, so a fragment being written costs one row group's rows and
// its encoded bytes (a chunk of them on stores that write in place: objstore.Sink) — not all
// of its rows gathered into one batch first.
package fragment

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/strata-store/strata/storage/objstore"
)

// WriterOptions choose how a fragment is encoded.
type WriterOptions struct {
	// Mem allocates the encoder's buffers; memory.DefaultAllocator when nil.
	Mem memory.Allocator
	// Codec compresses the pages (Codec, the default, when zero is not wanted: pass it).
	Codec compress.Compression
	// NullEverywhere[i] (nil: none) says column i is null in every row the fragment will hold:
	// such a column, when nullable, is not stored, and readers take it as null in every row.
	NullEverywhere []bool
	// StoreEveryColumn and NoPageIndex write fragments as earlier releases did (every column of
	// the schema; no page index), which readers still take. Only tests set them.
	StoreEveryColumn, NoPageIndex bool
}

// Writer encodes one fragment a row group at a time into an objstore.Sink. It is used by one
// goroutine; the caller ends it with Finish or Abort.
type Writer struct {
	path string
	out  objstore.Sink
	w    *pqarrow.FileWriter
	rows int64
	// kept are the indices of the columns the fragment stores, schema their fields (kept nil:
	// every column).
	kept   []int
	schema *arrow.Schema
}

// NewWriter starts a fragment at path in store, its layout chosen from first (its first row
// group; not written by NewWriter).
func NewWriter(ctx context.Context, store objstore.Store, path string, first arrow.RecordBatch, opts WriterOptions) (*Writer, error) {
	mem := opts.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	fw := &Writer{path: path, schema: first.Schema()}
	fields := first.Schema().Fields()
	if !opts.StoreEveryColumn && slices.Contains(opts.NullEverywhere, true) {
		kept := make([]arrow.Field, 0, len(fields))
		for i, f := range fields {
			if !f.Nullable || i >= len(opts.NullEverywhere) || !opts.NullEverywhere[i] {
				fw.kept, kept = append(fw.kept, i), append(kept, f)
			}
		}
		md := first.Schema().Metadata()
		fw.schema = arrow.NewSchema(kept, &md)
	}
	out, err := objstore.NewSink(ctx, store, path, -1)
	if err != nil {
		return nil, err
	}
	fw.out = out
	stored := fw.project(first)
	defer stored.Release()
	props := writerProperties(stored, mem, opts.Codec, !opts.NoPageIndex)
	// Each write is one row group (the caller cuts them), so the row-group bound only guards.
	props = append(props, parquet.WithMaxRowGroupLength(max(first.NumRows(), RowGroupRows)))
	w, err := pqarrow.NewFileWriter(fw.schema, out, parquet.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		out.Abort() // nothing written yet: a streamed sink's empty object is left for cleanup
		return nil, fmt.Errorf("fragment: encode %s: %w", path, err)
	}
	fw.w = w
	return fw, nil
}

// project is rec as the fragment stores it: without the columns it leaves out (rec itself when
// it leaves out none). The caller releases the result.
func (fw *Writer) project(rec arrow.RecordBatch) arrow.RecordBatch {
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

// NullInEveryPart says, for each column of parts (one schema), whether it is null in every row
// of every part (so in any rows taken from them): WriterOptions.NullEverywhere for them.
func NullInEveryPart(parts []arrow.RecordBatch) []bool {
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

// Path is where the fragment is being written.
func (fw *Writer) Path() string { return fw.path }

// Rows is how many rows were written.
func (fw *Writer) Rows() int64 { return fw.rows }

// Size is the fragment's encoded bytes so far.
func (fw *Writer) Size() int64 { return fw.out.Size() }

// Reserve makes room for n more bytes of output when the fragment is encoded into memory.
func (fw *Writer) Reserve(n int) { fw.out.Reserve(n) }

// Abort ends an unfinished fragment: frees its encoder and what the sink holds. created reports
// that an object was created at Path, which the caller must delete.
func (fw *Writer) Abort() (created bool) {
	_ = fw.w.Close()
	return fw.out.Abort()
}

// Write appends rec (every column of the schema the writer was started with; rows in key order,
// after every row written before) as a row group.
func (fw *Writer) Write(rec arrow.RecordBatch) error {
	stored := fw.project(rec)
	err := fw.w.Write(stored)
	stored.Release()
	if err != nil {
		return fmt.Errorf("fragment: encode %s: %w", fw.path, err)
	}
	if err := fw.out.Failed(); err != nil {
		return err
	}
	fw.rows += rec.NumRows()
	return nil
}

// Finish closes the fragment and stores it, returning its size. On error the caller deletes the
// object at Path: it may exist (a streamed object, or a put whose answer was lost).
func (fw *Writer) Finish(ctx context.Context) (int64, error) {
	if err := fw.w.Close(); err != nil {
		fw.out.Abort()
		return 0, fmt.Errorf("fragment: encode %s: %w", fw.path, err)
	}
	size := fw.out.Size()
	if err := fw.out.Store(ctx); err != nil {
		return size, err
	}
	return size, nil
}
