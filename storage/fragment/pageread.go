// Point reads straight from Parquet pages: a row of a flat column is found through the row
// group's offset index (the page holding the row), that page's header, its decompressed values
// and, for a dictionary-encoded page, the dictionary page — with no general Parquet reader set
// up per read (no per-column readers, buffers or goroutines). Fragments or columns this path
// does not handle (nested types, no page index, encodings other than PLAIN and dictionary, data
// page v2) are read by the general path (readRowsAt). Malformed pages are errors, never panics.
package fragment

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/strata-store/strata/storage/cache"
)

var errPage = errors.New("malformed parquet page")

// errPageUnsupported: a well-formed page this path does not read (a data page of version 2,
// another encoding); the read goes through the general path instead.
var errPageUnsupported = errors.New("parquet page not read by the page path")

// Parquet page types and encodings this path reads.
const (
	pageData       = 0
	pageDictionary = 2

	encPlain          = 0
	encPlainDict      = 2
	encRLE            = 3
	encRLEDictionary  = 8
	maxPageBytes      = 1 << 30 // no page of a fragment is larger (a malformed size is an error)
	maxDictionaryRows = 1 << 24
)

// pageLoc is one page of a column chunk, from the offset index.
type pageLoc struct {
	offset   int64
	size     int32
	firstRow int64
}

// decodeOffsetIndex parses a Thrift OffsetIndex: its page locations, in row order.
func decodeOffsetIndex(b []byte) ([]pageLoc, error) {
	r := &thriftReader{b: b}
	var pages []pageLoc
	var last int16
	for {
		id, typ, err := r.field(last)
		if err != nil {
			return nil, err
		}
		if typ == tStop {
			break
		}
		last = id
		if id != 1 || typ != tList {
			if err := r.skip(typ, 0); err != nil {
				return nil, err
			}
			continue
		}
		elem, n, err := r.listHeader()
		if err != nil || elem != tStruct {
			return nil, errThrift
		}
		pages = make([]pageLoc, 0, n)
		for range n {
			var p pageLoc
			var seen int
			var plast int16
			for {
				pid, ptyp, err := r.field(plast)
				if err != nil {
					return nil, err
				}
				if ptyp == tStop {
					break
				}
				plast = pid
				if (pid == 1 || pid == 3) && ptyp == tI64 || pid == 2 && ptyp == tI32 {
					v, err := r.int()
					if err != nil {
						return nil, err
					}
					switch pid {
					case 1:
						p.offset = v
					case 2:
						if v < 0 || v > maxPageBytes {
							return nil, errThrift
						}
						p.size = int32(v)
					case 3:
						p.firstRow = v
					}
					seen |= 1 << pid
					continue
				}
				if err := r.skip(ptyp, 1); err != nil {
					return nil, err
				}
			}
			if seen != 0b1110 || p.offset < 0 || p.firstRow < 0 {
				return nil, errThrift
			}
			pages = append(pages, p)
		}
	}
	for i := 1; i < len(pages); i++ {
		if pages[i].firstRow <= pages[i-1].firstRow {
			return nil, errThrift
		}
	}
	return pages, nil
}

// pageHeader is what a point read needs of a Parquet page header.
type pageHeader struct {
	typ          int32
	uncompressed int32
	compressed   int32
	numValues    int32
	encoding     int32
	defEncoding  int32
	headerBytes  int
}

// decodePageHeader parses the Thrift PageHeader at the start of b.
func decodePageHeader(b []byte) (pageHeader, error) {
	r := &thriftReader{b: b}
	var h pageHeader
	h.typ, h.defEncoding = -1, encRLE
	var last int16
	for {
		id, typ, err := r.field(last)
		if err != nil {
			return h, err
		}
		if typ == tStop {
			break
		}
		last = id
		switch {
		case id >= 1 && id <= 3 && typ == tI32:
			v, err := r.int()
			if err != nil || v < 0 || v > maxPageBytes {
				return h, errThrift
			}
			switch id {
			case 1:
				h.typ = int32(v)
			case 2:
				h.uncompressed = int32(v)
			case 3:
				h.compressed = int32(v)
			}
		case (id == 5 || id == 7) && typ == tStruct: // data page or dictionary page header
			var hlast int16
			for {
				hid, htyp, err := r.field(hlast)
				if err != nil {
					return h, err
				}
				if htyp == tStop {
					break
				}
				hlast = hid
				if hid >= 1 && hid <= 3 && htyp == tI32 {
					v, err := r.int()
					if err != nil || v < 0 || v > math.MaxInt32 {
						return h, errThrift
					}
					switch {
					case hid == 1:
						h.numValues = int32(v)
					case hid == 2:
						h.encoding = int32(v)
					case hid == 3 && id == 5:
						h.defEncoding = int32(v)
					}
					continue
				}
				if err := r.skip(htyp, 1); err != nil {
					return h, err
				}
			}
		default:
			if err := r.skip(typ, 0); err != nil {
				return h, err
			}
		}
	}
	h.headerBytes = r.pos
	if h.typ < 0 || int(h.compressed) > len(b)-r.pos {
		return h, errThrift
	}
	return h, nil
}

// hybrid walks an RLE/bit-packed hybrid run sequence of values of width bits.
type hybrid struct {
	data  []byte
	width int
	pos   int
	// the current run
	left   int    // values left in it
	rle    bool   // a repeated value (else bit-packed)
	value  uint64 // the repeated value
	packed []byte // bit-packed values of the run
	index  int    // next bit-packed value's index in packed
}

// newHybrid is a walk over data, a hybrid sequence of width-bit values (at most 32).
func newHybrid(data []byte, width int) (hybrid, error) {
	if width < 0 || width > 32 {
		return hybrid{}, errPage
	}
	return hybrid{data: data, width: width}, nil
}

// load reads the next run's header (a run may hold no values: callers load until one does).
func (h *hybrid) load() error {
	hdr, n := binary.Uvarint(h.data[h.pos:])
	if n <= 0 {
		return errPage
	}
	h.pos += n
	if hdr&1 == 0 { // a repeated run: the value in ceil(width/8) little-endian bytes
		count := hdr >> 1
		nb := (h.width + 7) / 8
		if count > math.MaxInt32 || nb > len(h.data)-h.pos {
			return errPage
		}
		var v uint64
		for i := range nb {
			v |= uint64(h.data[h.pos+i]) << (8 * i)
		}
		h.pos += nb
		h.left, h.rle, h.value = int(count), true, v
		return nil
	}
	groups := hdr >> 1 // groups of 8 values, width bytes each
	if groups > math.MaxInt32/8 || groups*uint64(h.width) > uint64(len(h.data)-h.pos) {
		return errPage
	}
	size := int(groups) * h.width
	h.packed, h.index = h.data[h.pos:h.pos+size], 0
	h.pos += size
	h.left, h.rle = int(groups)*8, false
	return nil
}

// next returns the next value.
func (h *hybrid) next() (uint64, error) {
	for h.left == 0 {
		if err := h.load(); err != nil {
			return 0, err
		}
	}
	h.left--
	if h.rle {
		return h.value, nil
	}
	h.index++
	return packedValue(h.packed, h.index-1, h.width), nil
}

// skip passes over the next n values: whole runs by their headers, within a run by arithmetic.
func (h *hybrid) skip(n int) error {
	_, err := h.walk(n, 0, false)
	return err
}

// count passes over the next n values and returns how many of them equal v (bit-packed runs of
// width 1 are counted a word at a time).
func (h *hybrid) count(n int, v uint64) (int, error) {
	return h.walk(n, v, true)
}

// walk passes over the next n values, counting those equal to v when counting.
func (h *hybrid) walk(n int, v uint64, counting bool) (int, error) {
	equal := 0
	for n > 0 {
		if h.left == 0 {
			if err := h.load(); err != nil {
				return 0, err
			}
			continue
		}
		k := min(n, h.left)
		switch {
		case !counting:
		case h.rle:
			if h.value == v {
				equal += k
			}
		case h.width == 1 && v <= 1:
			if ones := onesIn(h.packed, h.index, k); v == 1 {
				equal += ones
			} else {
				equal += k - ones
			}
		default:
			for j := range k {
				if packedValue(h.packed, h.index+j, h.width) == v {
					equal++
				}
			}
		}
		h.left, n = h.left-k, n-k
		if !h.rle {
			h.index += k
		}
	}
	return equal, nil
}

// packedValue is value i of a bit-packed run of width-bit values (width <= 32; least
// significant bit first): it lies within the five bytes from bit i*width.
func packedValue(packed []byte, i, width int) uint64 {
	bit := i * width
	var word uint64
	for j, at := 0, bit/8; j < 5 && at+j < len(packed); j++ {
		word |= uint64(packed[at+j]) << (8 * j)
	}
	return word >> (bit % 8) & (1<<width - 1)
}

// onesIn counts the set bits among bits [from, from+n) of packed (least significant first).
func onesIn(packed []byte, from, n int) int {
	ones := 0
	for n > 0 && from%64 != 0 { // up to a word boundary, a bit at a time
		ones += int(packed[from/8] >> (from % 8) & 1)
		from, n = from+1, n-1
	}
	for ; n >= 64; from, n = from+64, n-64 {
		ones += bits.OnesCount64(binary.LittleEndian.Uint64(packed[from/8:]))
	}
	for ; n > 0; from, n = from+1, n-1 {
		ones += int(packed[from/8] >> (from % 8) & 1)
	}
	return ones
}

// pageBufferPool holds decompression buffers of point reads (a read copies what it keeps).
var pageBufferPool = sync.Pool{New: func() any { return new([]byte) }}

// pageBody returns a page's decompressed body; done returns its buffer to the pool.
func pageBody(page []byte, h pageHeader, codec compress.Codec) (body []byte, done func(), err error) {
	raw := page[h.headerBytes : h.headerBytes+int(h.compressed)]
	if codec == nil {
		if h.uncompressed != h.compressed {
			return nil, nil, errPage
		}
		return raw, func() {}, nil
	}
	if int64(h.uncompressed) > max(1<<20, 256*int64(h.compressed)) {
		return nil, nil, fmt.Errorf("%w: a page of %d bytes claims %d uncompressed", errPage, h.compressed, h.uncompressed)
	}
	buf := pageBufferPool.Get().(*[]byte)
	if cap(*buf) < int(h.uncompressed) {
		*buf = make([]byte, h.uncompressed)
	}
	dst := (*buf)[:h.uncompressed]
	out, err := decodeSafely(codec, dst, raw)
	if err != nil || len(out) != int(h.uncompressed) {
		pageBufferPool.Put(buf)
		return nil, nil, fmt.Errorf("%w: decompressing: %v", errPage, err)
	}
	return out, func() { pageBufferPool.Put(buf) }, nil
}

// decodeSafely decompresses src into dst; a codec that panics on malformed input is an error.
func decodeSafely(codec compress.Codec, dst, src []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v", errPage, r)
		}
	}()
	if c, ok := codec.(interface {
		DecodeWithError(dst, src []byte) ([]byte, error)
	}); ok {
		return c.DecodeWithError(dst, src)
	}
	return codec.Decode(dst, src), nil
}

// pageColumn is one flat column chunk of a row group, ready for reads from its pages.
type pageColumn struct {
	name  string
	typ   arrow.DataType
	leaf  int            // the column's leaf index in the fragment
	desc  *schema.Column // nil: the fragment predates the column (every value null)
	chunk chunkInfo
	codec compress.Codec
	dict  *dictionary // the chunk's dictionary (read on first use)
	// Decoded dictionaries are cached under dictionaryKey(path, rowGroup, leaf) (a point read of
	// a row group whose dictionary is cached decompresses only the data page).
	cache    cache.Namespace
	path     string
	rowGroup int
}

// dictionaryKey names the cached dictionary of a fragment's row group's leaf column.
func dictionaryKey(path string, rg, leaf int) string {
	return path + "#dictionary-" + strconv.Itoa(rg) + "-" + strconv.Itoa(leaf)
}

// pageColumnPool holds the column lists of point reads (a get of a wide row sets up one per
// column, a few KiB each time otherwise).
var pageColumnPool sync.Pool // of *[]pageColumn

// pageColumns returns n zeroed pageColumns; releasePageColumns hands them back.
func pageColumns(n int) []pageColumn {
	if p, ok := pageColumnPool.Get().(*[]pageColumn); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]pageColumn, n)
}

func releasePageColumns(cols []pageColumn) {
	clear(cols[:cap(cols)]) // drops what they point to (dictionaries, types)
	pageColumnPool.Put(&cols)
}

// pointReadPhysical is the Parquet physical type this path reads each flat Arrow type from.
var pointReadPhysical = map[arrow.Type]parquet.Type{
	arrow.STRING: parquet.Types.ByteArray, arrow.LARGE_STRING: parquet.Types.ByteArray,
	arrow.BINARY: parquet.Types.ByteArray, arrow.LARGE_BINARY: parquet.Types.ByteArray,
	arrow.BOOL: parquet.Types.Boolean,
	arrow.INT8: parquet.Types.Int32, arrow.INT16: parquet.Types.Int32, arrow.INT32: parquet.Types.Int32,
	arrow.UINT8: parquet.Types.Int32, arrow.UINT16: parquet.Types.Int32, arrow.UINT32: parquet.Types.Int32,
	arrow.DATE32: parquet.Types.Int32,
	arrow.INT64:  parquet.Types.Int64, arrow.UINT64: parquet.Types.Int64, arrow.TIMESTAMP: parquet.Types.Int64,
	arrow.FLOAT32: parquet.Types.Float, arrow.FLOAT64: parquet.Types.Double,
}

// pointReadableType reports whether Arrow type dt is one this path reads (flat).
func pointReadableType(dt arrow.DataType) bool {
	_, ok := pointReadPhysical[dt.ID()]
	return ok
}

// pointReadable reports whether this path reads Arrow type dt stored as column c: a flat
// column of the expected physical type (timestamps: in the same unit).
func pointReadable(dt arrow.DataType, c *schema.Column) bool {
	phys, ok := pointReadPhysical[dt.ID()]
	if !ok || c.MaxRepetitionLevel() != 0 || c.MaxDefinitionLevel() > 1 || c.PhysicalType() != phys {
		return false
	}
	if dt.ID() != arrow.TIMESTAMP {
		return true
	}
	ts, ok := c.LogicalType().(schema.TimestampLogicalType)
	if !ok {
		return false
	}
	switch dt.(*arrow.TimestampType).Unit {
	case arrow.Millisecond:
		return ts.TimeUnit() == schema.TimeUnitMillis
	case arrow.Microsecond:
		return ts.TimeUnit() == schema.TimeUnitMicros
	case arrow.Nanosecond:
		return ts.TimeUnit() == schema.TimeUnitNanos
	}
	return false
}

// rowGroupPages is what a point read needs of one row group, decoded once and cached: each
// leaf column's pages (from the offset index) and chunk placement, and which leaves hold only
// nulls. Without it every get would rebuild the footer's column-chunk metadata and statistics
// objects for every column.
type rowGroupPages struct {
	pages   [][]pageLoc // by leaf, in row order
	chunks  []chunkInfo // by leaf
	allNull []bool      // by leaf: a null in every row (from the chunk's statistics)
}

// chunkInfo is where a column chunk's pages are and how they are compressed.
type chunkInfo struct {
	codec   compress.Compression
	hasDict bool
	dictAt  int64 // the dictionary page's offset (when hasDict)
	dataAt  int64 // the first data page's offset
	end     int64 // the offset just past the chunk
}

// rowGroupPagesOf returns row group rg's rowGroupPages (nil when the fragment has no page
// index), cached.
func (rd *Reader) rowGroupPagesOf(ctx context.Context, f Ref, md *metadata.FileMetaData, rg int) (*rowGroupPages, error) {
	key := f.Path + "#pages-" + strconv.Itoa(rg)
	if rp, ok := cache.Get[*rowGroupPages](rd.Cache, "page_locations", key); ok {
		return rp, nil
	}
	w, err := rd.offsetIndexWindow(ctx, f, md, rg)
	if err != nil || w.data == nil {
		return nil, err
	}
	meta := md.RowGroup(rg)
	n := meta.NumColumns()
	rp := &rowGroupPages{pages: make([][]pageLoc, n), chunks: make([]chunkInfo, n), allNull: make([]bool, n)}
	cost := int64(n) * 48
	for c := range n {
		cc, stats := leafStats(meta, c)
		if cc == nil {
			return nil, fmt.Errorf("fragment: %s: %w", f.Path, errPage)
		}
		loc := cc.GetOffsetIndexLocation()
		start := loc.Offset - w.at
		if start < 0 || start+int64(loc.Length) > int64(len(w.data)) {
			return nil, fmt.Errorf("fragment: %s: %w", f.Path, errPage)
		}
		if rp.pages[c], err = decodeOffsetIndex(w.data[start : start+int64(loc.Length)]); err != nil {
			return nil, fmt.Errorf("fragment: %s offset index: %w", f.Path, err)
		}
		rp.chunks[c] = chunkInfo{codec: cc.Compression(), hasDict: cc.HasDictionaryPage(), dataAt: cc.DataPageOffset()}
		chunkAt := cc.DataPageOffset()
		if rp.chunks[c].hasDict {
			rp.chunks[c].dictAt = cc.DictionaryPageOffset()
			chunkAt = min(chunkAt, rp.chunks[c].dictAt)
		}
		rp.chunks[c].end = chunkAt + cc.TotalCompressedSize()
		rp.allNull[c] = nullInEveryRow(meta, cc, stats)
		cost += int64(len(rp.pages[c])) * 24
	}
	cache.Add(rd.Cache, "page_locations", key, rp, cost)
	return rp, nil
}

// HasPageIndex reports whether row group rg of f was written with a page index (fragments of
// the first releases were not: every read of theirs goes through pqarrow).
func (rd *Reader) HasPageIndex(ctx context.Context, f Ref, rg int) (bool, error) {
	ft, err := rd.Footer(ctx, f)
	if err != nil {
		return false, err
	}
	rp, err := rd.rowGroupPagesOf(ctx, f, ft.md, rg)
	return rp != nil, err
}

// nestedAllNull reports whether top-level field name holds only nulls in the row group: every one
// of its leaves does, or the fragment does not store it.
func (rp *rowGroupPages) nestedAllNull(ft *Footer, name string) bool {
	leaves, stored := ft.topLeaves[name]
	if !stored {
		return true // the fragment does not store the column: null in every row
	}
	for _, l := range leaves {
		if l >= len(rp.allNull) || !rp.allNull[l] {
			return false
		}
	}
	return len(leaves) > 0
}

// readFromPages reads runs of rows (ascending, disjoint) of the row group's columns names (flat
// ones, typed by the read's schema) page by page: from the span (the row group's bytes) when
// fetched, else fetching just the pages it decodes. ok=false when the fragment or a column needs
// the general path.
func (g *groupRead) readFromPages(ctx context.Context, names []string, runs []rowRun) (rec arrow.RecordBatch, ok bool, err error) {
	rd, f, ft, rg, rp, tableSchema := g.rd, g.f, g.ft, g.rg, g.pages, g.schema
	md := ft.md
	if rp == nil {
		return nil, false, nil
	}
	rgRows := ft.rowStarts[rg+1] - ft.rowStarts[rg]
	var rows int64
	for _, run := range runs {
		if run.first < 0 || run.n < 1 || run.n > rgRows-run.first {
			return nil, false, fmt.Errorf("fragment: %s row group %d has no rows %d+%d", f.Path, rg, run.first, run.n)
		}
		rows += run.n
	}
	idx := rp.pages
	cols := pageColumns(len(names))
	defer releasePageColumns(cols)
	for i, name := range names {
		fi := tableSchema.FieldIndices(name)
		if len(fi) == 0 {
			return nil, false, fmt.Errorf("fragment: no column %q", name)
		}
		cols[i].name, cols[i].typ = name, tableSchema.Field(fi[0]).Type
		leaf, stored := ft.flatLeaves[name]
		if !pointReadableType(cols[i].typ) {
			if !rp.nestedAllNull(ft, name) {
				return nil, false, nil // a nested column with values: the general path
			}
			continue // only nulls in this row group
		}
		if !stored {
			continue // the fragment predates the column
		}
		if leaf < len(rp.allNull) && rp.allNull[leaf] {
			continue // null in every row of the row group: no page to read
		}
		desc := md.Schema.Column(leaf)
		if !pointReadable(cols[i].typ, desc) || leaf >= len(rp.chunks) || leaf >= len(idx) {
			return nil, false, nil
		}
		chunk := rp.chunks[leaf]
		cols[i].desc, cols[i].chunk, cols[i].leaf = desc, chunk, leaf
		cols[i].cache, cols[i].path, cols[i].rowGroup = rd.Cache, f.Path, rg
		if chunk.codec != compress.Codecs.Uncompressed {
			if cols[i].codec, err = compress.GetCodec(chunk.codec); err != nil {
				return nil, false, nil
			}
		}
	}
	var window *pageWindows
	if g.span.data != nil {
		window = rd.spanWindows(ctx, f, g.span)
	} else {
		// The data pages holding the runs and the dictionary pages not cached yet, fetched
		// together (a dictionary page is decoded once, then cached).
		ranges := make([]byteRange, 0, len(cols)*(len(runs)+1))
		for i := range cols {
			c := &cols[i]
			if c.desc == nil {
				continue
			}
			pages := idx[c.leaf]
			for _, run := range runs {
				lo := sort.Search(len(pages), func(j int) bool { return pages[j].firstRow > run.first }) - 1
				for p := max(lo, 0); p < len(pages) && pages[p].firstRow < run.first+run.n; p++ {
					ranges = append(ranges, byteRange{pages[p].offset, int64(pages[p].size)})
				}
			}
			if c.chunk.hasDict && c.chunk.dataAt > c.chunk.dictAt && !c.cachedDictionary() {
				ranges = append(ranges, byteRange{c.chunk.dictAt, c.chunk.dataAt - c.chunk.dictAt})
			}
		}
		// Every value is copied into values below and a dictionary page before it is cached,
		// so the pages' buffers go back to their pools when the read returns.
		if g.cachePages {
			window, err = rd.cachedPages(ctx, f, ranges)
		} else {
			window, err = rd.fetchPages(ctx, f, ranges, true)
		}
		if err != nil {
			window.release()
			return nil, false, err
		}
		defer window.release()
	}
	values := getPointValues()
	defer values.release()
	types := make([]arrow.DataType, len(cols))
	for i := range cols {
		c := &cols[i]
		types[i] = c.typ
		var pages []pageLoc
		if c.desc != nil {
			pages = idx[c.leaf]
		}
		for _, run := range runs {
			if err := c.appendRunValues(values, pages, window, run, rgRows); err != nil {
				if errors.Is(err, errPageUnsupported) {
					return nil, false, nil
				}
				return nil, false, fmt.Errorf("fragment: read %s row group %d rows %d+%d column %q: %w", f.Path, rg, run.first, run.n, c.name, err)
			}
		}
	}
	arrs, err := values.arrays(rd.Mem, types, int(rows))
	if errors.Is(err, errPageUnsupported) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("fragment: read %s row group %d: %w", f.Path, rg, err)
	}
	defer releaseArrays(arrs) // the record batch holds its own references
	// Every column's field is tableSchema's field of that name (cols above).
	return array.NewRecordBatch(rd.Schemas.Of(tableSchema, names), arrs, rows), true, nil
}
