package arrowutil

// Selecting rows that come in runs: a merge takes rows in key order from the appended batches,
// so wherever a client's ids count up within a batch, key order follows consecutive rows of one
// batch; a compaction takes consecutive rows of one fragment wherever the fragments' key ranges
// do not interleave. Such a selection is copied run by run: flat columns buffer by buffer (values,
// offsets rebased, validity bits), nested ones as slices concatenated. That costs a fraction of
// Arrow's row-by-row take (index resolution and a type dispatch per value, a goroutine and a
// channel per call).

import (
	"fmt"
	"sort"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// minGatherRun is the average run length from which a selection is copied run by run: shorter
// runs are taken row by row. BenchmarkP13TakeRuns (rollout-like flat columns, copy time / take
// time): 0.82 at runs of 1 row, 0.45 at 4, 0.39 at 8, 0.27 at 4,096. Nested columns are sliced
// run by run, an allocation per run, so short runs stay with the take.
const minGatherRun = 8

// rowRun is rows [start, end) of part.
type rowRun struct {
	part       int
	start, end int64
}

// rowRunsOf splits indices (rows of parts laid end to end) into runs of consecutive rows of one
// part. ok is false when they are not worth copying run by run (shorter than minGatherRun on
// average: counting stops as soon as that is certain) or an index is out of range (the row-by-row
// take reports it).
func rowRunsOf(parts []arrow.RecordBatch, indices []int64) (runs []rowRun, ok bool) {
	if len(indices) < minGatherRun {
		return nil, false
	}
	starts := make([]int64, len(parts)+1) // starts[p]: the first index of part p
	for i, p := range parts {
		starts[i+1] = starts[i] + p.NumRows()
	}
	total := starts[len(parts)]
	maxRuns := len(indices) / minGatherRun
	part := 0
	for _, x := range indices {
		if x < 0 || x >= total {
			return nil, false
		}
		if n := len(runs); n > 0 && x == starts[part]+runs[n-1].end && x < starts[part+1] { // part: the last run's
			runs[n-1].end++
			continue
		}
		if x < starts[part] || x >= starts[part+1] {
			// The part holding x: the last whose first index is at most x (empty parts skipped).
			part = sort.Search(len(parts), func(p int) bool { return starts[p+1] > x })
		}
		if len(runs) == maxRuns {
			return nil, false
		}
		runs = append(runs, rowRun{part: part, start: x - starts[part], end: x - starts[part] + 1})
	}
	return runs, true
}

// gatherRuns copies runs of rows of parts (of schema) into one new record of rows rows. A nullable
// column null in every part becomes a shared all-null array; see gatherColumn for the others.
func gatherRuns(mem memory.Allocator, schema *arrow.Schema, parts []arrow.RecordBatch, runs []rowRun, rows int) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	chunks := make([]arrow.ArrayData, len(parts))
	for c, f := range schema.Fields() {
		nulls := f.Nullable
		for i, p := range parts {
			chunks[i] = p.Column(c).Data()
			nulls = nulls && allNull(p.Column(c))
		}
		if nulls {
			cols = append(cols, Nulls(f.Type, rows))
			continue
		}
		col, err := gatherColumn(mem, f.Type, chunks, runs, rows)
		if err != nil {
			return nil, fmt.Errorf("select rows of column %q: %w", f.Name, err)
		}
		cols = append(cols, col)
	}
	return array.NewRecordBatch(schema, cols, int64(rows)), nil
}

// gatherColumn copies runs of rows of one column (chunks: its array in each part) into one new
// array of rows rows. Flat columns (fixed-width values, booleans, strings and binaries) are
// copied buffer by buffer, run by run, with no per-run allocation; other types (lists, structs,
// dictionaries, ...) have each run sliced and the slices concatenated.
func gatherColumn(mem memory.Allocator, dt arrow.DataType, chunks []arrow.ArrayData, runs []rowRun, rows int) (arrow.Array, error) {
	var values []*memory.Buffer
	var err error
	switch fixed, isFixed := dt.(arrow.FixedWidthDataType); {
	case (dt.ID() == arrow.STRING || dt.ID() == arrow.BINARY) && buffersHold(chunks, 3, 4, 1):
		values, err = gatherBinary[int32](mem, chunks, runs)
	case (dt.ID() == arrow.LARGE_STRING || dt.ID() == arrow.LARGE_BINARY) && buffersHold(chunks, 3, 8, 1):
		values, err = gatherBinary[int64](mem, chunks, runs)
	case dt.ID() == arrow.BOOL && buffersHold(chunks, 2, 0, 0):
		values = []*memory.Buffer{gatherBits(mem, chunks, runs, rows, 1)}
	case isFixed && dt.ID() != arrow.BOOL && dt.ID() != arrow.DICTIONARY && dt.ID() != arrow.EXTENSION && fixed.BitWidth() > 0 && fixed.BitWidth()%8 == 0 && len(chunks[0].Children()) == 0 &&
		buffersHold(chunks, 2, fixed.BitWidth()/8, 0):
		values = []*memory.Buffer{gatherFixed(mem, chunks, runs, rows, fixed.BitWidth()/8)}
	default:
		return concatRuns(mem, chunks, runs)
	}
	if err != nil {
		return nil, err
	}
	validity, nulls := gatherValidity(mem, chunks, runs, rows)
	buffers := append([]*memory.Buffer{validity}, values...)
	data := array.NewData(dt, rows, buffers, nil, nulls, 0)
	for _, b := range buffers {
		if b != nil {
			b.Release()
		}
	}
	defer data.Release()
	return array.MakeFromData(data), nil
}

// buffersHold reports whether every chunk has the buffers a flat layout of n buffers needs for
// all of its rows: a validity bitmap where it has nulls, and values of width bytes per row (0:
// one bit per row) plus extra more (a last offset).
func buffersHold(chunks []arrow.ArrayData, n, width, extra int) bool {
	for _, c := range chunks {
		b := c.Buffers()
		if len(b) != n || b[1] == nil {
			return false
		}
		end := c.Offset() + c.Len()
		if c.NullN() > 0 && (b[0] == nil || int64(b[0].Len()) < bitutil.BytesForBits(int64(end))) {
			return false
		}
		if width == 0 && int64(b[1].Len()) < bitutil.BytesForBits(int64(end)) || width > 0 && b[1].Len() < (end+extra)*width {
			return false
		}
	}
	return true
}

// concatRuns slices each run out of its chunk and concatenates the slices.
func concatRuns(mem memory.Allocator, chunks []arrow.ArrayData, runs []rowRun) (arrow.Array, error) {
	slices := make([]arrow.Array, len(runs))
	for i, r := range runs {
		d := array.NewSliceData(chunks[r.part], r.start, r.end)
		slices[i] = array.MakeFromData(d)
		d.Release()
	}
	defer func() {
		for _, s := range slices {
			s.Release()
		}
	}()
	return array.Concatenate(slices, mem)
}

// gatherValidity copies the runs' validity bits into a new bitmap: nil, with no nulls, when no
// chunk has any.
func gatherValidity(mem memory.Allocator, chunks []arrow.ArrayData, runs []rowRun, rows int) (*memory.Buffer, int) {
	for _, c := range chunks {
		if c.NullN() > 0 {
			bitmap := gatherBits(mem, chunks, runs, rows, 0)
			return bitmap, rows - bitutil.CountSetBits(bitmap.Bytes(), 0, rows)
		}
	}
	return nil, 0
}

// gatherBits copies the runs' bits of buffer buf (0: validity, where a chunk without a bitmap
// has every row valid; 1: a boolean column's values) into a new bitmap.
func gatherBits(mem memory.Allocator, chunks []arrow.ArrayData, runs []rowRun, rows, buf int) *memory.Buffer {
	out := memory.NewResizableBuffer(mem)
	out.Resize(int(bitutil.BytesForBits(int64(rows))))
	bits := out.Bytes()
	clear(bits)
	at := 0
	for _, r := range runs {
		c, n := chunks[r.part], int(r.end-r.start)
		if src := c.Buffers()[buf]; src != nil && src.Len() > 0 {
			bitutil.CopyBitmap(src.Bytes(), c.Offset()+int(r.start), n, bits, at)
		} else {
			bitutil.SetBitsTo(bits, int64(at), int64(n), true)
		}
		at += n
	}
	return out
}

// gatherFixed copies the runs' values of width bytes each into a new buffer.
func gatherFixed(mem memory.Allocator, chunks []arrow.ArrayData, runs []rowRun, rows, width int) *memory.Buffer {
	out := memory.NewResizableBuffer(mem)
	out.Resize(rows * width)
	dst := out.Bytes()
	at := 0
	for _, r := range runs {
		c := chunks[r.part]
		from, to := (c.Offset()+int(r.start))*width, (c.Offset()+int(r.end))*width
		at += copy(dst[at:], c.Buffers()[1].Bytes()[from:to])
	}
	return out
}

// gatherBinary copies the runs' offsets (rebased) and value bytes of a string or binary column
// with offsets of type O into two new buffers.
func gatherBinary[O int32 | int64](mem memory.Allocator, chunks []arrow.ArrayData, runs []rowRun) ([]*memory.Buffer, error) {
	offsetsOf := func(c arrow.ArrayData, r rowRun) []O {
		all := arrow.GetData[O](c.Buffers()[1].Bytes())
		return all[c.Offset()+int(r.start) : c.Offset()+int(r.end)+1]
	}
	var rows, size int64
	for _, r := range runs {
		offs := offsetsOf(chunks[r.part], r)
		first, last := offs[0], offs[len(offs)-1]
		if first < 0 || last < first || int64(last) > int64(bufferLen(chunks[r.part].Buffers()[2])) {
			return nil, fmt.Errorf("offsets %d to %d out of the values' bounds", first, last)
		}
		rows, size = rows+r.end-r.start, size+int64(last-first)
	}
	if size > int64(^uint64(0)>>(65-8*unsafe.Sizeof(O(0)))) {
		return nil, fmt.Errorf("%d bytes of values do not fit the column's offsets", size)
	}
	offsets, data := memory.NewResizableBuffer(mem), memory.NewResizableBuffer(mem)
	offsets.Resize(int(rows+1) * int(unsafe.Sizeof(O(0))))
	data.Resize(int(size))
	outOffs, outData := arrow.GetData[O](offsets.Bytes()), data.Bytes()
	var end O
	outOffs[0] = 0
	row := 1
	for _, r := range runs {
		c := chunks[r.part]
		offs := offsetsOf(c, r)
		first, last := offs[0], offs[len(offs)-1]
		if last > first {
			copy(outData[end:], c.Buffers()[2].Bytes()[first:last])
		}
		for _, o := range offs[1:] {
			outOffs[row] = end + o - first
			row++
		}
		end += last - first
	}
	return []*memory.Buffer{offsets, data}, nil
}

// bufferLen is b's length in bytes (0 for a missing buffer).
func bufferLen(b *memory.Buffer) int {
	if b == nil {
		return 0
	}
	return b.Len()
}
