// Page-path arrays: the values a read from pages takes of each flat column (a get's row, a
// run's rows), laid out as Arrow arrays directly, every column's buffers carved from one
// allocation per read. A builder per column would allocate its own buffers (sized for 32 values,
// each padded, regrown as values come) and builder objects, even for the one value a get returns.
package fragment

import (
	"fmt"
	"math"
	"reflect"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// pointValues collects a read's values column by column, rows in order: each value copied into
// scratch (a fixed-width value in its Arrow width, a boolean as one byte), so nothing points into
// the pages it came from.
type pointValues struct {
	scratch []byte
	ends    []int         // end of each value in scratch
	nulls   []bool        // by value
	layouts []pointLayout // arrays' per-column sizes, kept for the next read
}

// maxPooledPointScratch: a read that collected more keeps its scratch out of the pool.
const maxPooledPointScratch = 1 << 20

var pointValuesPool = sync.Pool{New: func() any { return new(pointValues) }}

func getPointValues() *pointValues { return pointValuesPool.Get().(*pointValues) }

func (p *pointValues) release() {
	if cap(p.scratch) > maxPooledPointScratch {
		return
	}
	p.scratch, p.ends, p.nulls = p.scratch[:0], p.ends[:0], p.nulls[:0]
	pointValuesPool.Put(p)
}

func (p *pointValues) appendNull() {
	p.ends = append(p.ends, len(p.scratch))
	p.nulls = append(p.nulls, true)
}

// appendValue adds v, the Parquet plain bytes of a value of Arrow type dt (little-endian; an
// INT32 column holds narrower integers in its low bytes).
func (p *pointValues) appendValue(dt arrow.DataType, v []byte) error {
	switch {
	case offsetWidth(dt) > 0:
		p.scratch = append(p.scratch, v...)
	case dt.ID() == arrow.BOOL:
		if len(v) < 1 {
			return errPage
		}
		b := byte(0)
		if v[0] == 1 {
			b = 1
		}
		p.scratch = append(p.scratch, b)
	default:
		fw, ok := dt.(arrow.FixedWidthDataType)
		if !ok {
			return fmt.Errorf("%w: no point read of %s", errPage, dt)
		}
		w := fw.BitWidth() / 8
		if w < 1 || len(v) < w {
			return errPage
		}
		p.scratch = append(p.scratch, v[:w]...)
	}
	p.ends = append(p.ends, len(p.scratch))
	p.nulls = append(p.nulls, false)
	return nil
}

// Columns of nulls for point reads, shared. A point read takes nested columns only where a row
// group holds no value of them, and most of a sparse row's flat columns are null; building an
// array of nulls costs a dozen objects for a list or struct type and several for a flat one, per
// column per get. An array is immutable, so one per type and row count (at most
// maxCachedNullRows) is built and handed out with a reference of its own. The cache keeps a
// reference too, so no reader's Release frees one; it is bounded by entries (types come from
// manifests' schemas) and starts over past it.
const (
	maxNullColumns    = 256
	maxCachedNullRows = 8
)

var nullColumns struct {
	mu sync.Mutex // guards m; held for the lookup or insert only
	m  map[nullColumnKey]arrow.Array
}

// nullColumnKey: a type by identity (a manifest's schema's field type) and a row count.
type nullColumnKey struct {
	dt   arrow.DataType
	rows int
}

// nullColumn is an array of rows nulls of type dt, to be released by the caller.
func nullColumn(mem memory.Allocator, dt arrow.DataType, rows int) arrow.Array {
	if reflect.TypeOf(dt).Kind() != reflect.Pointer || rows > maxCachedNullRows {
		// only a pointer type is comparable by identity as a map key (every arrow type is one)
		return array.MakeArrayOfNull(mem, dt, rows)
	}
	k := nullColumnKey{dt, rows}
	nullColumns.mu.Lock()
	a, ok := nullColumns.m[k]
	nullColumns.mu.Unlock()
	if !ok {
		// Outside any reader's allocator: the cache, not a read, owns it.
		a = array.MakeArrayOfNull(memory.DefaultAllocator, dt, rows)
		nullColumns.mu.Lock()
		if nullColumns.m == nil || len(nullColumns.m) >= maxNullColumns {
			nullColumns.m = make(map[nullColumnKey]arrow.Array)
		}
		if cached, ok := nullColumns.m[k]; ok {
			a = cached // another read built it first
		} else {
			nullColumns.m[k] = a
		}
		nullColumns.mu.Unlock()
	}
	a.Retain()
	return a
}

// pointLayout is one column's buffers within the read's allocation.
type pointLayout struct {
	validity, values, data int // bytes of each (0: none)
	nulls                  int
}

func pad8(n int) int { return (n + 7) &^ 7 }

// offsetWidth is the byte width of the offsets of dt's arrays: 4 or 8 for strings and binaries
// (which hold offsets and data), 0 for every other type.
func offsetWidth(dt arrow.DataType) int {
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY:
		return 4
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return 8
	}
	return 0
}

// arrays lays out columns of types (each with rows values, in the order appended) as arrays.
// Buffers start 8-byte aligned within one allocation and need no allocator. A column null in
// every one of a point read's few rows (most of a sparse schema's) is a shared all-null array
// (nullColumn), and so is a nested column (only nulls here: the point path reads no nested
// values).
func (p *pointValues) arrays(mem memory.Allocator, types []arrow.DataType, rows int) ([]arrow.Array, error) {
	if len(p.ends) != len(types)*rows {
		return nil, fmt.Errorf("%w: %d values for %d columns of %d rows", errPage, len(p.ends), len(types), rows)
	}
	layouts := p.layouts[:0]
	for range types {
		layouts = append(layouts, pointLayout{})
	}
	p.layouts = layouts
	total, buffers := 0, 0
	for c, dt := range types {
		l := &layouts[c]
		first := c * rows
		if !pointReadableType(dt) {
			continue
		}
		for r := range rows {
			if p.nulls[first+r] {
				l.nulls++
			}
		}
		if l.nulls == rows && rows <= maxCachedNullRows {
			continue // null throughout a get's rows: a shared all-null array, no buffers
		}
		if l.nulls > 0 {
			l.validity = int(bitutil.BytesForBits(int64(rows)))
		}
		switch w := offsetWidth(dt); {
		case w > 0:
			l.values = (rows + 1) * w
			l.data = p.start(first+rows) - p.start(first)
			if w == 4 && l.data > math.MaxInt32 {
				return nil, errPageUnsupported // past 32-bit offsets: the general path
			}
		case dt.ID() == arrow.BOOL:
			l.values = int(bitutil.BytesForBits(int64(rows)))
		default:
			l.values = rows * (dt.(arrow.FixedWidthDataType).BitWidth() / 8)
		}
		total += pad8(l.validity) + pad8(l.values) + pad8(l.data)
		buffers += 1 + min(l.validity, 1) // values (or offsets)
		if offsetWidth(dt) > 0 {
			buffers++ // their data, even when empty
		}
	}
	// One allocation each for the bytes, the buffer objects in use and their lists.
	arena := make([]byte, total)
	bufs := make([]memory.Buffer, buffers)
	ptrs := make([]*memory.Buffer, 3*len(types))
	buffer := func(b []byte) *memory.Buffer {
		buf := &bufs[0]
		bufs = bufs[1:]
		buf.Reset(b)
		return buf
	}
	out := make([]arrow.Array, len(types))
	at := 0
	carve := func(n int) []byte {
		b := arena[at : at+n : at+n]
		at += pad8(n)
		return b
	}
	for c, dt := range types {
		l, first := layouts[c], c*rows
		if !pointReadableType(dt) {
			for r := range rows {
				if !p.nulls[first+r] {
					releaseArrays(out)
					return nil, fmt.Errorf("%w: a value of nested column type %s", errPage, dt)
				}
			}
			out[c] = nullColumn(mem, dt, rows)
			continue
		}
		if l.nulls == rows && rows <= maxCachedNullRows {
			out[c] = nullColumn(mem, dt, rows)
			continue
		}
		var validity []byte
		if l.validity > 0 {
			validity = carve(l.validity)
			for r := range rows {
				if !p.nulls[first+r] {
					bitutil.SetBit(validity, r)
				}
			}
		}
		values := carve(l.values)
		var data []byte
		switch w := offsetWidth(dt); {
		case w > 0:
			base := p.start(first)
			data = carve(l.data)
			copy(data, p.scratch[base:p.start(first+rows)])
			if w == 4 {
				offs := arrow.Int32Traits.CastFromBytes(values)
				for r := range rows {
					offs[r+1] = int32(p.ends[first+r] - base)
				}
			} else {
				offs := arrow.Int64Traits.CastFromBytes(values)
				for r := range rows {
					offs[r+1] = int64(p.ends[first+r] - base)
				}
			}
		case dt.ID() == arrow.BOOL:
			for r := range rows {
				if s := p.start(first + r); !p.nulls[first+r] && p.scratch[s] == 1 {
					bitutil.SetBit(values, r)
				}
			}
		default:
			w := dt.(arrow.FixedWidthDataType).BitWidth() / 8
			for r := range rows {
				if !p.nulls[first+r] {
					s := p.start(first + r)
					copy(values[r*w:(r+1)*w], p.scratch[s:s+w])
				}
			}
		}
		b := ptrs[3*c : 3*c+2 : 3*c+3]
		if validity != nil {
			b[0] = buffer(validity)
		}
		b[1] = buffer(values)
		if data != nil {
			b = append(b, buffer(data))
		}
		d := array.NewData(dt, rows, b, nil, l.nulls, 0)
		out[c] = array.MakeFromData(d)
		d.Release()
	}
	return out, nil
}

// start is where value i begins in scratch.
func (p *pointValues) start(i int) int {
	if i == 0 {
		return 0
	}
	return p.ends[i-1]
}
