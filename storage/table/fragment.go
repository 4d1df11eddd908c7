// Data fragments: immutable Parquet files written with pqarrow (row-group statistics on, the Arrow
// schema stored so types round-trip). Reads fetch only the byte ranges of the columns they need
// (a key-only scan never touches payload columns); whole-fragment scans fetch the file at once.
package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

// Layout (docs/format/table.md, "Fragment layout"): row groups of about rowGroupBytes of Arrow
// data, at most rowGroupRows rows (wide rows get fewer), never fewer than minRowGroupRows, cut
// into data pages of about dataPageBytes with a page index, so that a point lookup seeks to the
// one page of each column holding its row while scans read few, large row groups. Dictionaries
// stop growing at dictionaryPageBytes (the column falls back to plain encoding), so a point read
// never decodes a large dictionary for one value. Scans read batches of scanBatchRows.
const (
	rowGroupRows        = 4096
	minRowGroupRows     = 64
	rowGroupBytes       = 2 << 20
	dataPageBytes       = 32 << 10
	dictionaryPageBytes = 64 << 10
	scanBatchRows       = 64 * 1024
)

// maxStatsBytes bounds a column chunk's min/max statistics: longer values (text, JSON documents)
// keep only their null counts, so a footer stays small to cache and quick to decode however
// long the rows are.
const maxStatsBytes = 128

// rowGroupLength picks the row-group size for rec.
func rowGroupLength(rec arrow.RecordBatch) int64 {
	return rowGroupRowsFor(batchBytes(rec), rec.NumRows())
}

// batchBytes is the size of rec's buffers (all of each: for a slice, more than its rows hold).
func batchBytes(rec arrow.RecordBatch) int64 {
	var size int64
	for _, c := range rec.Columns() {
		size += int64(c.Data().SizeInBytes())
	}
	return size
}

// rowGroupRowsFor is the row-group size for rows taking bytes in memory (the layout above).
func rowGroupRowsFor(bytes, rows int64) int64 {
	if rows <= 0 {
		return rowGroupRows
	}
	return min(rowGroupRows, max(minRowGroupRows, rowGroupBytes/max(bytes/rows, 1)))
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

// fragmentCodec compresses fragment pages: LZ4 (raw block format), chosen by measurement
// (P13-encode-*: the least CPU per row to write and to read of the codecs that compress;
// docs/format/table.md). Compactions always write it; an upsert writes it unless upsertCodec
// says otherwise.
var fragmentCodec = compress.Codecs.Lz4Raw

// upsertCodec is the page codec of an upsert's fragment of n rows: none when n is below
// uncompressedBelow (a WAL merge passes the compaction's target, so the fragment is a compaction
// candidate from its commit on, and the compaction that takes it in compresses its rows: LZ4 at
// the merge too would be paid twice, for bytes kept only until then; the first level of an LSM
// tree left uncompressed), fragmentCodec otherwise.
func upsertCodec(n, uncompressedBelow int64) compress.Compression {
	if n < uncompressedBelow {
		return compress.Codecs.Uncompressed
	}
	return fragmentCodec
}

// encodeFragmentWith serialises rec (aligned to the table schema) whole as one fragment with
// the given page codec, in the layout fragments have (benchmarks compare codecs with it; merges
// and compactions write through fragmentWriter, a row group at a time).
func encodeFragmentWith(rec arrow.RecordBatch, mem memory.Allocator, codec compress.Compression) ([]byte, error) {
	var buf bytes.Buffer
	opts := append(fragmentWriterProperties(rec, mem, codec), parquet.WithMaxRowGroupLength(rowGroupLength(rec)))
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

// writePageIndex: fragments are written with a page index (offset and column indexes). Only
// tests turn it off, to write fragments as the first releases did, which readers still take.
var writePageIndex = true

// fragmentWriterProperties is the layout of a fragment whose rows look like rec (the row-group
// length aside): page size and write batches, dictionaries where they pay, codec, statistics,
// page index.
func fragmentWriterProperties(rec arrow.RecordBatch, mem memory.Allocator, codec compress.Compression) []parquet.WriterProperty {
	opts := []parquet.WriterProperty{
		parquet.WithAllocator(mem),
		parquet.WithCompression(codec),
		parquet.WithStats(true),
		parquet.WithMaxStatsSize(maxStatsBytes),
		parquet.WithDictionaryDefault(true),
		parquet.WithDictionaryPageSizeLimit(dictionaryPageBytes),
		parquet.WithDataPageSize(dataPageBytes),
		parquet.WithBatchSize(writeBatchRows(rec)),
		parquet.WithPageIndexEnabled(writePageIndex),
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

// objectReader adapts an object to parquet.ReaderAtSeeker with ranged reads. Reads inside one of
// its windows (byte ranges fetched ahead, or cached) are served from it.
type objectReader struct {
	ctx     context.Context
	store   objstore.Store
	key     string
	size    int64
	pos     int64
	windows []readWindow
}

// readWindow is bytes of the object starting at offset at.
type readWindow struct {
	at   int64
	data []byte
}

func (r *objectReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	for _, w := range r.windows {
		if off >= w.at && off+int64(len(p)) <= w.at+int64(len(w.data)) {
			return copy(p, w.data[off-w.at:]), nil
		}
	}
	b, err := r.store.GetRange(r.ctx, r.key, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (r *objectReader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	return n, err
}

func (r *objectReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		r.pos = offset
	case io.SeekCurrent:
		r.pos += offset
	case io.SeekEnd:
		r.pos = r.size + offset
	}
	if r.pos < 0 {
		return 0, errors.New("table: seek before start")
	}
	return r.pos, nil
}

// fragmentAccess is how a fragment reader gets the bytes its column readers decode.
type fragmentAccess int

const (
	// accessRanges fetches by range; a column reader reads its whole column chunk first.
	accessRanges fragmentAccess = iota
	// accessWhole fetches the file in one read (whole-fragment scans).
	accessWhole
	// accessPages (point reads) adds the row group's cached offset index to what is served
	// from memory and makes column readers pull pages through a pointReadBuffer, so a read
	// decodes only the pages it seeks to.
	accessPages
	// accessStream (sequential batches of one row group) makes column readers pull pages
	// through a streamReadBuffer instead of copying their column chunks first: a reader then
	// holds the row group's encoded bytes once.
	accessStream
)

// streamReadBuffer is how much an accessStream column reader reads at a time: a page or two.
const streamReadBuffer = 64 << 10

// openFragment opens a fragment for reading as access says. Unless the whole file is fetched,
// reads inside spans (byte ranges the caller fetched already; empty ones are ignored) are served
// from them; without spans, when the footer is cached the byte span of the rowGroups about to
// be read is fetched ahead in one request (a point read then costs one ranged read, not one per
// column chunk). Footers are cached per path (files are immutable).
func (t *Table) openFragment(ctx context.Context, f Fragment, access fragmentAccess, spans []readWindow, rowGroups ...int) (*pqarrow.FileReader, error) {
	whole, pages := access == accessWhole, access == accessPages
	ft, cached := cache.Get[*footer](t.cache, "footer", f.Path)
	var md *metadata.FileMetaData
	if cached {
		md = ft.md
	}
	var src parquet.ReaderAtSeeker
	if whole {
		data, err := t.store.Get(ctx, f.Path)
		if err != nil {
			return nil, fmt.Errorf("table: read fragment %s: %w", f.Path, err)
		}
		src = bytes.NewReader(data)
	} else {
		or := &objectReader{ctx: ctx, store: t.store, key: f.Path, size: f.Bytes}
		for _, w := range spans {
			if w.data != nil {
				or.windows = append(or.windows, w)
			}
		}
		if cached && len(rowGroups) > 0 {
			if len(or.windows) == 0 {
				w, err := t.rowGroupWindow(ctx, f, md, rowGroups)
				if err != nil {
					return nil, err
				}
				if w.data != nil {
					or.windows = append(or.windows, w)
				}
			}
			if pages && len(rowGroups) == 1 {
				w, err := t.offsetIndexWindow(ctx, f, md, rowGroups[0])
				if err != nil {
					return nil, err
				}
				if w.data != nil {
					or.windows = append(or.windows, w)
				}
			}
		}
		src = or
	}
	props := parquet.NewReaderProperties(t.mem)
	switch access {
	case accessPages:
		// Point reads: column readers pull pages through a small buffer (the page index takes
		// them to the page holding the row) instead of copying whole column chunks first.
		props.BufferedStreamEnabled, props.BufferSize = true, pointReadBuffer
	case accessStream:
		props.BufferedStreamEnabled, props.BufferSize = true, streamReadBuffer
	}
	opts := []file.ReadOption{file.WithReadProps(props)}
	if cached {
		opts = append(opts, file.WithMetadata(md))
	}
	pf, err := file.NewParquetReader(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("table: open fragment %s: %w", f.Path, err)
	}
	if !cached {
		// The decoded footer is a few times its Thrift encoding.
		ft := newFooter(pf.MetaData())
		cache.Add(t.cache, "footer", f.Path, ft, 4*int64(pf.MetaData().Size())+8*int64(len(ft.rowStarts)))
	}
	// String and binary columns reserve their values' bytes up front, from the row group's
	// uncompressed size (fragments are written by this package, so the footer is trusted), instead
	// of growing a buffer by doublings that each allocate, zero and copy.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: scanBatchRows, PreAllocBinaryData: true}, t.mem)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("table: open fragment %s: %w", f.Path, err)
	}
	return fr, nil
}

// footer is a fragment's decoded Parquet footer, where each row group starts, and the leaf
// column of each top-level flat column.
type footer struct {
	md         *metadata.FileMetaData
	rowStarts  []int64          // row group i holds rows rowStarts[i] .. rowStarts[i+1]-1
	flatLeaves map[string]int   // column name -> leaf index, for leaves whose path is one name
	topLeaves  map[string][]int // top-level column name -> its leaf indices
}

func newFooter(md *metadata.FileMetaData) *footer {
	starts := make([]int64, md.NumRowGroups()+1)
	for i, rg := range md.GetRowGroups() {
		starts[i+1] = starts[i] + rg.GetNumRows()
	}
	leaves, top := map[string]int{}, map[string][]int{}
	for i := range md.Schema.NumColumns() {
		path := md.Schema.Column(i).ColumnPath()
		if len(path) == 1 {
			leaves[path[0]] = i
		}
		if len(path) > 0 {
			top[path[0]] = append(top[path[0]], i)
		}
	}
	return &footer{md: md, rowStarts: starts, flatLeaves: leaves, topLeaves: top}
}

// nullEverywhere reports whether column name is null in every row of the fragment: the fragment
// does not store it, or it is a flat column whose chunk statistics count a null in every row of
// every row group (false when they do not say).
func (f *footer) nullEverywhere(name string) bool {
	if _, stored := f.topLeaves[name]; !stored {
		return true
	}
	leaf, flat := f.flatLeaves[name]
	if !flat {
		return false
	}
	for rg := range f.md.NumRowGroups() {
		meta := f.md.RowGroup(rg)
		if cc, stats := leafStats(meta, leaf); !nullInEveryRow(meta, cc, stats) {
			return false
		}
	}
	return true
}

// rowGroupOf maps a row of the fragment to its row group and the row's offset in it (-1 when the
// fragment has no such row).
func (f *footer) rowGroupOf(row int64) (int, int64) {
	if row < 0 || row >= f.rowStarts[len(f.rowStarts)-1] {
		return -1, 0
	}
	rg := sort.Search(len(f.rowStarts)-1, func(i int) bool { return f.rowStarts[i+1] > row })
	return rg, row - f.rowStarts[rg]
}

// rowGroupWindow fetches the byte span of the row groups in one ranged read (an empty window
// when the footer does not describe them).
func (t *Table) rowGroupWindow(ctx context.Context, f Fragment, md *metadata.FileMetaData, rowGroups []int) (readWindow, error) {
	start, end, ok := rowGroupSpan(md, rowGroups)
	if !ok {
		return readWindow{}, nil
	}
	data, err := t.store.GetRange(ctx, f.Path, start, end-start)
	if err != nil {
		return readWindow{}, fmt.Errorf("table: read fragment %s: %w", f.Path, err)
	}
	if int64(len(data)) != end-start {
		return readWindow{}, fmt.Errorf("table: read fragment %s: %w", f.Path, errPage)
	}
	return readWindow{at: start, data: data}, nil
}

// offsetIndexWindow returns the bytes of row group rg's offset indexes (every column's, stored
// together after the row groups), from the object cache when possible: a point read seeks
// through them to the page holding its row, and they never change. A fragment written without a
// page index gives an empty window.
func (t *Table) offsetIndexWindow(ctx context.Context, f Fragment, md *metadata.FileMetaData, rg int) (readWindow, error) {
	if rg < 0 || rg >= md.NumRowGroups() {
		return readWindow{}, nil
	}
	key := f.Path + "#offset-index-" + strconv.Itoa(rg)
	if w, ok := cache.Get[readWindow](t.cache, "offset_index", key); ok {
		return w, nil
	}
	start, end := int64(math.MaxInt64), int64(-1)
	meta := md.RowGroup(rg)
	for c := 0; c < meta.NumColumns(); c++ {
		cc, err := meta.ColumnChunk(c)
		if err != nil {
			return readWindow{}, nil
		}
		loc := cc.GetOffsetIndexLocation()
		if loc == nil {
			return readWindow{}, nil
		}
		start, end = min(start, loc.Offset), max(end, loc.Offset+int64(loc.Length))
	}
	if end <= start || start < 0 || end > f.Bytes {
		return readWindow{}, nil
	}
	data, err := t.store.GetRange(ctx, f.Path, start, end-start)
	if err != nil {
		return readWindow{}, fmt.Errorf("table: read fragment %s: %w", f.Path, err)
	}
	w := readWindow{at: start, data: data}
	cache.Add(t.cache, "offset_index", key, w, int64(len(data)))
	return w, nil
}

// fragmentFooter returns a fragment's Parquet footer, from the cache when possible.
func (t *Table) fragmentFooter(ctx context.Context, f Fragment) (*footer, error) {
	if ft, ok := cache.Get[*footer](t.cache, "footer", f.Path); ok {
		return ft, nil
	}
	fr, err := t.openFragment(ctx, f, accessRanges, nil)
	if err != nil {
		return nil, err
	}
	ft := newFooter(fr.ParquetReader().MetaData())
	fr.ParquetReader().Close()
	return ft, nil
}

// rowGroupSpan is the byte range holding every column chunk of the row groups (ok=false when
// the footer does not describe them).
func rowGroupSpan(md *metadata.FileMetaData, groups []int) (start, end int64, ok bool) {
	start = math.MaxInt64
	for _, g := range groups {
		if g < 0 || g >= md.NumRowGroups() {
			return 0, 0, false
		}
		rg := md.RowGroup(g)
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return 0, 0, false
			}
			s := cc.DataPageOffset()
			if cc.HasDictionaryPage() {
				s = min(s, cc.DictionaryPageOffset())
			}
			start, end = min(start, s), max(end, s+cc.TotalCompressedSize())
		}
	}
	return start, end, start < end
}

// leafColumns maps top-level column names to Parquet leaf column indices; names the fragment
// does not have (columns added after it was written) are returned in missing.
func leafColumns(fr *pqarrow.FileReader, names []string) (leaves []int, missing []string) {
	for _, name := range names {
		found := false
		for _, sf := range fr.Manifest.Fields {
			if sf.Field.Name == name {
				leaves = appendLeaves(leaves, &sf)
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, name)
		}
	}
	return leaves, missing
}

func appendLeaves(out []int, sf *pqarrow.SchemaField) []int {
	if len(sf.Children) == 0 {
		return append(out, sf.ColIndex)
	}
	for i := range sf.Children {
		out = appendLeaves(out, &sf.Children[i])
	}
	return out
}

// readFragment reads the named columns (in that order, as typed by schema) of the given row
// groups (nil = all) as one record; columns the fragment predates are nulls.
func (t *Table) readFragment(ctx context.Context, f Fragment, schema *arrow.Schema, names []string, rowGroups []int, whole bool) (arrow.RecordBatch, error) {
	access, prefetch := accessWhole, []int(nil)
	if !whole {
		access, prefetch = accessRanges, rowGroups
	}
	fr, err := t.openFragment(ctx, f, access, nil, prefetch...)
	if err != nil {
		return nil, err
	}
	defer fr.ParquetReader().Close()
	fr.Props.Parallel = true // columns decode concurrently
	groups := rowGroupsOrAll(fr, rowGroups)
	var n int64
	for _, g := range groups {
		n += fr.ParquetReader().MetaData().RowGroup(g).NumRows()
	}
	read := storedColumns(fr, names, groups)
	if len(read) == 0 {
		return t.layoutColumns(nil, n, schema, names)
	}
	leaves, _ := leafColumns(fr, read)
	tbl, err := fr.ReadRowGroups(ctx, leaves, groups)
	if err != nil {
		return nil, fmt.Errorf("table: read fragment %s: %w", f.Path, err)
	}
	defer tbl.Release()
	return t.layoutColumns(tbl, n, schema, names)
}

// pointReadRows is the most rows of one row group read by seeking to each (one value decoded
// per column, readRowsAt) rather than by decoding the whole row group (readFragment).
const pointReadRows = 4

// pointReadBuffer is how much a point read's column reader reads at a time.
const pointReadBuffer = 16 << 10

// readRowsAt reads the rows at offsets (ascending, within row group rg) as readFragment lays
// them out: every column seeks to each row and decodes just that value.
func (t *Table) readRowsAt(ctx context.Context, f Fragment, schema *arrow.Schema, names []string, rg int, offsets []int64) (arrow.RecordBatch, error) {
	// Flat columns of a fragment with a page index come straight from their pages
	// (pageread.go), which fetch only the pages they decode; nested ones, and every column of
	// older fragments, through pqarrow, which reads the row group's byte span. When both are
	// needed the span is fetched once, here, and serves both.
	ft, err := t.fragmentFooter(ctx, f)
	if err != nil {
		return nil, err
	}
	if rg < 0 || rg >= ft.md.NumRowGroups() {
		return nil, fmt.Errorf("table: fragment %s has no row group %d", f.Path, rg)
	}
	rp, err := t.rowGroupPagesOf(ctx, f, ft.md, rg) // nil: no page index, only the general path
	if err != nil {
		return nil, err
	}
	flat, nested := splitPageColumns(schema, ft, rp, names)
	runs := pointRuns(offsets)
	var span readWindow // empty: not fetched, and ignored by the reads below
	if len(flat) > 0 && len(nested) > 0 {
		if span, err = t.rowGroupWindow(ctx, f, ft.md, []int{rg}); err != nil {
			return nil, err
		}
	}
	return t.readRunsInSpan(ctx, f, span, rp, schema, names, flat, nested, rg, runs)
}

// readRunsInSpan reads runs of row group rg as readPagesThenGeneral does, the general path
// served from span too (empty: it fetches what it reads).
func (t *Table) readRunsInSpan(ctx context.Context, f Fragment, span readWindow, rp *rowGroupPages, schema *arrow.Schema, names, flat, nested []string, rg int, runs []rowRun) (arrow.RecordBatch, error) {
	return t.readPagesThenGeneral(ctx, f, span, rp, schema, names, flat, nested, rg, runs, func(names []string) (arrow.RecordBatch, error) {
		return t.readRowsGeneral(ctx, f, []readWindow{span}, schema, names, rg, runs)
	})
}

// readPagesThenGeneral reads the runs of row group rg of names: the flat columns page by page
// (readRowsFromPages, from span when fetched), the nested ones through general, joined; every
// column through general when the page path cannot read the flat ones.
func (t *Table) readPagesThenGeneral(ctx context.Context, f Fragment, span readWindow, rp *rowGroupPages, schema *arrow.Schema, names, flat, nested []string, rg int, runs []rowRun,
	general func(names []string) (arrow.RecordBatch, error)) (arrow.RecordBatch, error) {
	if len(flat) == 0 {
		return general(names)
	}
	fromPages, ok, err := t.readRowsFromPages(ctx, f, span, rp, schema, flat, rg, runs)
	if err != nil {
		return nil, err
	}
	if !ok {
		return general(names)
	}
	if len(nested) == 0 {
		return fromPages, nil
	}
	defer fromPages.Release()
	rest, err := general(nested)
	if err != nil {
		return nil, err
	}
	defer rest.Release()
	return joinColumns(names, fromPages, rest, fromPages.NumRows()), nil
}

// splitPageColumns splits names into the columns the page path reads (flat ones, and nested
// ones holding only nulls in the row group rp describes; rp nil: no page index) and the nested
// ones the general path reads.
func splitPageColumns(schema *arrow.Schema, ft *footer, rp *rowGroupPages, names []string) (flat, nested []string) {
	// A nested column holding only nulls has nothing to decode: the page path lays out nulls.
	pageColumn := func(n string) bool {
		fi := schema.FieldIndices(n)
		return len(fi) > 0 && (pointReadableType(schema.Field(fi[0]).Type) || rp != nil && rp.nestedAllNull(ft, n))
	}
	if !slices.ContainsFunc(names, func(n string) bool { return !pageColumn(n) }) {
		return names, nil // the common case, without a copy
	}
	for _, n := range names {
		if pageColumn(n) {
			flat = append(flat, n)
		} else {
			nested = append(nested, n)
		}
	}
	return flat, nested
}

// joinColumns is the named columns, each taken from whichever of a and b holds it, as one record
// of rows rows.
func joinColumns(names []string, a, b arrow.RecordBatch, rows int64) arrow.RecordBatch {
	cols := make([]arrow.Array, len(names))
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		from := a
		if j := a.Schema().FieldIndices(n); len(j) == 0 {
			from = b
		}
		j := from.Schema().FieldIndices(n)[0]
		cols[i], fields[i] = from.Column(j), from.Schema().Field(j)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rows)
}

// rowRun is n consecutive rows of a row group from row first.
type rowRun struct{ first, n int64 }

// pointRuns is each of offsets as a run of one row.
func pointRuns(offsets []int64) []rowRun {
	runs := make([]rowRun, len(offsets))
	for i, off := range offsets {
		runs[i] = rowRun{off, 1}
	}
	return runs
}

// readRowsGeneral reads runs of rows (ascending) of row group rg through pqarrow's column
// readers: each column seeks to each run (through the page index) and decodes the run's values
// from the pages holding it. spans: bytes of the fragment already fetched (none: the row
// group's span is fetched first).
func (t *Table) readRowsGeneral(ctx context.Context, f Fragment, spans []readWindow, schema *arrow.Schema, names []string, rg int, runs []rowRun) (arrow.RecordBatch, error) {
	var rows int64
	for _, r := range runs {
		rows += r.n
	}
	fr, err := t.openFragment(ctx, f, accessPages, spans, rg)
	if err != nil {
		return nil, err
	}
	defer fr.ParquetReader().Close()
	read := storedColumns(fr, names, []int{rg})
	if len(read) == 0 {
		return t.layoutColumns(nil, rows, schema, names)
	}
	// Point reads decode one column at a time, on this goroutine: pqarrow's record reader would
	// hand every column of every seek to a goroutine of its own, and each hand-off costs a point
	// read more latency than the decoding. Runs of parallelRunRows rows or more (a listing's page,
	// an item's events) decode their columns on up to GOMAXPROCS goroutines; each writes only its
	// own slot of cols, and every one has returned before they are read.
	cols := make([]*arrow.Column, len(read))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	decode := func(ctx context.Context, i int) error {
		c, err := readRunsOfColumn(ctx, fr, f, read[i], rg, runs)
		cols[i] = c
		return err
	}
	if rows < parallelRunRows || len(read) == 1 {
		for i := range read {
			if err := decode(ctx, i); err != nil {
				return nil, err
			}
		}
	} else {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(runtime.GOMAXPROCS(0))
		for i := range read {
			g.Go(func() error { return decode(gctx, i) })
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	fields := make([]arrow.Field, 0, len(read))
	stored := make([]arrow.Column, 0, len(read))
	for _, c := range cols {
		if c != nil { // nil: not in this fragment, layoutColumns fills in nulls
			fields, stored = append(fields, c.Field()), append(stored, *c)
		}
	}
	tbl := array.NewTable(arrow.NewSchema(fields, nil), stored, rows)
	defer tbl.Release()
	return t.layoutColumns(tbl, rows, schema, names)
}

// parallelRunRows: runs of rows reading at least this many rows in all decode their columns
// concurrently (readRowsGeneral).
const parallelRunRows = 256

// readRunsOfColumn decodes the runs of rows of row group rg of column name (nil when the
// fragment does not store it).
func readRunsOfColumn(ctx context.Context, fr *pqarrow.FileReader, f Fragment, name string, rg int, runs []rowRun) (*arrow.Column, error) {
	fi := slices.IndexFunc(fr.Manifest.Fields, func(sf pqarrow.SchemaField) bool { return sf.Field.Name == name })
	if fi < 0 {
		return nil, nil
	}
	leaves := map[int]bool{}
	for _, l := range appendLeaves(nil, &fr.Manifest.Fields[fi]) {
		leaves[l] = true
	}
	cr, err := fr.GetFieldReader(ctx, fi, leaves, []int{rg})
	if err != nil {
		return nil, fmt.Errorf("table: read fragment %s: %w", f.Path, err)
	}
	defer cr.Release()
	chunks := make([]arrow.Array, 0, len(runs))
	defer func() { releaseArrays(chunks) }()
	for _, run := range runs {
		if err := cr.SeekToRow(run.first); err != nil {
			return nil, fmt.Errorf("table: read fragment %s row group %d row %d: %w", f.Path, rg, run.first, err)
		}
		got, err := cr.NextBatch(run.n)
		if err != nil || int64(got.Len()) != run.n {
			if got != nil {
				got.Release()
			}
			return nil, fmt.Errorf("table: read fragment %s row group %d rows %d+%d: %v", f.Path, rg, run.first, run.n, err)
		}
		for _, c := range got.Chunks() {
			if c.Len() > 0 {
				c.Retain()
				chunks = append(chunks, c)
			}
		}
		got.Release()
	}
	field := *cr.Field()
	chunked := arrow.NewChunked(field.Type, chunks)
	defer chunked.Release()
	return arrow.NewColumn(field, chunked), nil
}

// rangeReadShare: a row group whose wanted rows lie within at most 1/rangeReadShare of its rows
// is read as that run of rows (readRowRange), not decoded whole. A row group is sized for scans
// (about rowGroupBytes); a page of a listing wants a few hundred rows of one.
const rangeReadShare = 2

// readRowRange reads rows [first, first+n) of row group rg, decoding only the pages holding
// them: those pages of every column it reads (and their dictionary pages) are fetched first,
// coalesced, instead of the row group's span. Fragments without a page index take the row group
// whole.
func (t *Table) readRowRange(ctx context.Context, f Fragment, schema *arrow.Schema, names []string, rg int, first, n int64) (arrow.RecordBatch, error) {
	ft, err := t.fragmentFooter(ctx, f)
	if err != nil {
		return nil, err
	}
	rp, err := t.rowGroupPagesOf(ctx, f, ft.md, rg)
	if err != nil {
		return nil, err
	}
	if rp == nil {
		rec, err := t.readFragment(ctx, f, schema, names, []int{rg}, false)
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		return rec.NewSlice(first, first+n), nil
	}
	// Flat columns (most of them) come straight from their pages; nested ones with values
	// through pqarrow's column readers.
	flat, nested := splitPageColumns(schema, ft, rp, names)
	return t.readPagesThenGeneral(ctx, f, readWindow{}, rp, schema, names, flat, nested, rg, []rowRun{{first, n}}, func(names []string) (arrow.RecordBatch, error) {
		return t.readRangeGeneral(ctx, f, ft, rp, schema, names, rg, first, n)
	})
}

// readRangeGeneral reads rows [first, first+n) of row group rg through pqarrow's column readers:
// the pages holding them of every column it reads (and their dictionary pages) are fetched
// first, coalesced, instead of the row group's span.
func (t *Table) readRangeGeneral(ctx context.Context, f Fragment, ft *footer, rp *rowGroupPages, schema *arrow.Schema, names []string, rg int, first, n int64) (arrow.RecordBatch, error) {
	var ranges []byteRange
	for _, name := range names {
		for _, leaf := range ft.topLeaves[name] {
			if leaf >= len(rp.pages) || rp.allNull[leaf] {
				continue
			}
			pages := rp.pages[leaf]
			lo := sort.Search(len(pages), func(i int) bool { return pages[i].firstRow > first }) - 1
			hi := sort.Search(len(pages), func(i int) bool { return pages[i].firstRow > first+n-1 }) - 1
			if lo < 0 || hi < lo {
				return nil, fmt.Errorf("table: fragment %s row group %d: %w", f.Path, rg, errPage)
			}
			// Column readers pull a pointReadBuffer at a time from where they are, up to the
			// chunk's end: each range reaches that far past its pages, so no pull misses it.
			c := rp.chunks[leaf]
			end := min(c.end, pages[hi].offset+int64(pages[hi].size)+pointReadBuffer)
			ranges = append(ranges, byteRange{pages[lo].offset, end - pages[lo].offset})
			if c.hasDict && c.dataAt > c.dictAt {
				ranges = append(ranges, byteRange{c.dictAt, min(c.end, max(c.dataAt, c.dictAt+pointReadBuffer)) - c.dictAt})
			}
		}
	}
	if len(ranges) == 0 { // every column it reads is null here (or not in the fragment)
		return t.layoutColumns(nil, n, schema, names)
	}
	windows, err := t.fetchPages(ctx, f, ranges, false) // the general path's decoders may keep slices of them
	if err != nil {
		return nil, err
	}
	return t.readRowsGeneral(ctx, f, windows.windows, schema, names, rg, []rowRun{{first, n}})
}

// releaseArrays releases the arrays of arrs (nil entries: none yet).
func releaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// storedColumns is names without the columns that are null in every row of the row groups (a
// sparse schema's unused columns): there is nothing to decode, and layoutColumns fills in any
// column it does not get with nulls.
func storedColumns(fr *pqarrow.FileReader, names []string, rowGroups []int) []string {
	read := make([]string, 0, len(names))
	for _, name := range names {
		stored := false
		for _, rg := range rowGroups {
			if !allNullInRowGroup(fr, name, rg) {
				stored = true
				break
			}
		}
		if stored || len(rowGroups) == 0 {
			read = append(read, name)
		}
	}
	return read
}

// allNullInRowGroup reports, from its column chunk statistics, whether top-level column name is
// null in every row of row group rg. Only a nullable column with a single, unnested leaf
// qualifies: there a null leaf value is a null row (in a list or struct it may be an empty list
// or a null child).
func allNullInRowGroup(fr *pqarrow.FileReader, name string, rg int) bool {
	for _, sf := range fr.Manifest.Fields {
		if sf.Field.Name != name {
			continue
		}
		if !sf.Field.Nullable || len(sf.Children) != 0 || sf.ColIndex < 0 {
			return false
		}
		meta := fr.ParquetReader().MetaData().RowGroup(rg)
		cc, stats := leafStats(meta, sf.ColIndex)
		return nullInEveryRow(meta, cc, stats)
	}
	return false
}

// leafStats returns leaf column leaf's chunk in a row group and its statistics (nil when the
// chunk has none or they cannot be read).
func leafStats(meta *metadata.RowGroupMetaData, leaf int) (*metadata.ColumnChunkMetaData, metadata.TypedStatistics) {
	cc, err := meta.ColumnChunk(leaf)
	if err != nil {
		return nil, nil
	}
	if set, err := cc.StatsSet(); err != nil || !set {
		return cc, nil
	}
	stats, err := cc.Statistics()
	if err != nil {
		return cc, nil
	}
	return cc, stats
}

// nullInEveryRow reports, from a chunk's statistics, whether it holds one null entry per row of
// its row group (false when unknown).
func nullInEveryRow(meta *metadata.RowGroupMetaData, cc *metadata.ColumnChunkMetaData, stats metadata.TypedStatistics) bool {
	return stats != nil && stats.HasNullCount() && stats.NullCount() == meta.NumRows() && cc.NumValues() == meta.NumRows()
}

// layoutColumns returns the named columns of tbl, n rows (in that order, as typed by schema), as
// one record; columns tbl lacks (the fragment predates them, or they were not read because they
// hold only nulls; tbl may be nil) are shared all-null arrays.
func (t *Table) layoutColumns(tbl arrow.Table, n int64, schema *arrow.Schema, names []string) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(names))
	fields := make([]arrow.Field, len(names))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, name := range names {
		fi := schema.FieldIndices(name)
		if len(fi) == 0 {
			return nil, fmt.Errorf("table: no column %q", name)
		}
		fields[i] = schema.Field(fi[0])
		var ti []int
		if tbl != nil {
			ti = tbl.Schema().FieldIndices(name)
		}
		if len(ti) == 0 {
			cols[i] = arrowutil.Nulls(fields[i].Type, int(n))
			continue
		}
		col, err := concatChunks(tbl.Column(ti[0]).Data(), t.mem)
		if err != nil {
			return nil, err
		}
		cols[i] = col
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n), nil
}

func rowGroupsOrAll(fr *pqarrow.FileReader, rowGroups []int) []int {
	if rowGroups != nil {
		return rowGroups
	}
	all := make([]int, fr.ParquetReader().NumRowGroups())
	for i := range all {
		all[i] = i
	}
	return all
}

func concatChunks(c *arrow.Chunked, mem memory.Allocator) (arrow.Array, error) {
	chunks := c.Chunks()
	switch len(chunks) {
	case 0:
		return array.MakeArrayOfNull(mem, c.DataType(), 0), nil
	case 1:
		chunks[0].Retain()
		return chunks[0], nil
	}
	return array.Concatenate(chunks, mem)
}
