// The fragment layout and its encoding: row groups sized by bytes, data pages with a page index,
// dictionaries only where they pay, statistics bounded, and the page codec.
package fragment

import (
	"bytes"
	"hash/maphash"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Layout (docs/format/table.md, "Fragment layout"): row groups of about RowGroupBytes of Arrow
// data, at most RowGroupRows rows (wide rows get fewer), never fewer than MinRowGroupRows, cut
// into data pages of about dataPageBytes with a page index, so that a point lookup seeks to the
// one page of each column holding its row while scans read few, large row groups. Dictionaries
// stop growing at dictionaryPageBytes (the column falls back to plain encoding), so a point read
// never decodes a large dictionary for one value. Scans read batches of ScanBatchRows.
const (
	RowGroupRows        = 4096
	MinRowGroupRows     = 64
	RowGroupBytes       = 2 << 20
	dataPageBytes       = 32 << 10
	dictionaryPageBytes = 64 << 10
	ScanBatchRows       = 64 * 1024
)

// maxStatsBytes bounds a column chunk's min/max statistics: longer values (text, JSON documents)
// keep only their null counts, so a footer stays small to cache and quick to decode however
// long the rows are.
const maxStatsBytes = 128

// RowGroupLength picks the row-group size for rec.
func RowGroupLength(rec arrow.RecordBatch) int64 {
	return RowGroupRowsFor(BatchBytes(rec), rec.NumRows())
}

// BatchBytes is the size of rec's buffers (all of each: for a slice, more than its rows hold).
func BatchBytes(rec arrow.RecordBatch) int64 {
	var size int64
	for _, c := range rec.Columns() {
		size += int64(c.Data().SizeInBytes())
	}
	return size
}

// RowGroupRowsFor is the row-group size for rows taking bytes in memory (the layout above).
func RowGroupRowsFor(bytes, rows int64) int64 {
	if rows <= 0 {
		return RowGroupRows
	}
	return min(RowGroupRows, max(MinRowGroupRows, RowGroupBytes/max(bytes/rows, 1)))
}

// writeBatchRows picks how many values the Parquet writer takes per batch: it checks a page's
// size only between batches, so a batch must hold no more than about one page of the widest
// column (at the writer's default of 1,024 values, 500-byte text made ~300 KiB pages, and every
// point read of such a column decompressed all of one). A quarter of a page keeps pages within
// 1.25x dataPageBytes.
func writeBatchRows(rec arrow.RecordBatch) int64 {
	if rec.NumRows() == 0 {
		return 1024
	}
	var widest int64
	for _, c := range rec.Columns() {
		widest = max(widest, int64(c.Data().SizeInBytes())/rec.NumRows())
	}
	return min(1024, max(8, dataPageBytes/4/max(widest, 1))) // pages end within 1.25x the size
}

// dictionarySample is how many leading values of a column decide whether it is dictionary-encoded.
const dictionarySample = 1024

// mostlyDistinct reports whether more than half of the first dictionarySample values of a flat
// column differ from one another (nested columns: false, they keep the writer's default). It
// runs for every column of every fragment written, so it allocates nothing: it collects one
// 64-bit word per value (fixed-width values themselves; strings and binary values hashed, where
// a collision could only make a column look a little less distinct) on the stack and counts the
// distinct words after sorting them.
func mostlyDistinct(arr arrow.Array) bool {
	n := min(arr.Len(), dictionarySample)
	if n < 16 || !pointReadableType(arr.DataType()) {
		return false
	}
	var buf [dictionarySample]uint64
	words := buf[:0]
	switch a := arr.(type) {
	case *array.String:
		words = appendHashes(words, a, n, maphash.String)
	case *array.LargeString:
		words = appendHashes(words, a, n, maphash.String)
	case *array.Binary:
		words = appendHashes(words, a, n, maphash.Bytes)
	case *array.LargeBinary:
		words = appendHashes(words, a, n, maphash.Bytes)
	default:
		fixed, ok := arr.DataType().(arrow.FixedWidthDataType)
		width := 0
		if ok {
			width = fixed.BitWidth() / 8
		}
		if width == 0 || width > 8 { // booleans: at most two values, never more than half of 16
			return false
		}
		values, offset := arr.Data().Buffers()[1], arr.Data().Offset()
		if values == nil || values.Len() < (offset+n)*width {
			return false // not laid out as its type says: the writer's default (a heuristic)
		}
		data := values.Bytes()
		for i := range n {
			if arr.IsValid(i) {
				var w uint64
				for _, b := range data[(offset+i)*width : (offset+i+1)*width] {
					w = w<<8 | uint64(b)
				}
				words = append(words, w)
			}
		}
	}
	slices.Sort(words)
	distinct := 0
	for i, w := range words {
		if i == 0 || w != words[i-1] {
			distinct++
		}
	}
	return distinct*2 > n
}

// distinctSeed seeds mostlyDistinct's string hashes (any seed will do; one per process).
var distinctSeed = maphash.MakeSeed()

// appendHashes appends the hash of each of the first n values of arr that is not null.
func appendHashes[T string | []byte](words []uint64, arr interface {
	IsValid(i int) bool
	Value(i int) T
}, n int, hash func(maphash.Seed, T) uint64) []uint64 {
	for i := range n {
		if arr.IsValid(i) {
			words = append(words, hash(distinctSeed, arr.Value(i)))
		}
	}
	return words
}

// Codec compresses fragment pages: LZ4 (raw block format), chosen by measurement
// (P13-encode-*: the least CPU per row to write and to read of the codecs that compress;
// docs/format/table.md). Compactions always write it; a table's upsert writes it unless the
// rows are few enough to be compacted soon (then uncompressed).
var Codec = compress.Codecs.Lz4Raw

// Encode serialises rec whole as one fragment with the given page codec, in memory, in the
// layout fragments have (benchmarks compare codecs with it; tables write through Writer, a row
// group at a time).
func Encode(rec arrow.RecordBatch, mem memory.Allocator, codec compress.Compression) ([]byte, error) {
	var buf bytes.Buffer
	opts := append(writerProperties(rec, mem, codec, true), parquet.WithMaxRowGroupLength(RowGroupLength(rec)))
	props := parquet.NewWriterProperties(opts...)
	arrProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem))
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, arrProps)
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writerProperties is the layout of a fragment whose rows look like rec (the row-group
// length aside): page size and write batches, dictionaries where they pay, codec, statistics,
// page index.
func writerProperties(rec arrow.RecordBatch, mem memory.Allocator, codec compress.Compression, pageIndex bool) []parquet.WriterProperty {
	opts := []parquet.WriterProperty{
		parquet.WithAllocator(mem),
		parquet.WithCompression(codec),
		parquet.WithStats(true),
		parquet.WithMaxStatsSize(maxStatsBytes),
		parquet.WithDictionaryDefault(true),
		parquet.WithDictionaryPageSizeLimit(dictionaryPageBytes),
		parquet.WithDataPageSize(dataPageBytes),
		parquet.WithBatchSize(writeBatchRows(rec)),
		parquet.WithPageIndexEnabled(pageIndex),
	}
	for i, f := range rec.Schema().Fields() {
		// Dictionary-encode a column only where it pays: a column whose sampled values are
		// mostly distinct (ids, sequence numbers, free text) is written plain from the start —
		// a dictionary would only fill up, spill to plain pages, and cost every point read of
		// the rows it holds a dictionary decode; the writer's own check drops one whose first
		// page would not shrink. A column with no value among the first rows is written plain
		// too (its pages hold only null flags either way): the Parquet writer hands a dictionary
		// encoder a slice header per row, null or not, where a plain one takes the Arrow
		// buffers as they are.
		if col := rec.Column(i); col.NullN() == col.Len() || mostlyDistinct(col) {
			opts = append(opts, parquet.WithDictionaryFor(f.Name, false))
		}
		opts = append(opts, parquet.WithDictionaryCostFallbackFor(f.Name, true))
	}
	return opts
}
