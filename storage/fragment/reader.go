// Reading fragments from an object store: the Reader (store, cache namespace, allocator), the
// byte windows a read fetches ahead, opening a fragment through pqarrow, and its cached footer.
package fragment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

// Reader reads fragments from one object store. A value: a table builds one and passes it by
// pointer; it holds no lock and is safe for concurrent use.
type Reader struct {
	Store objstore.Store
	// Cache is the table's namespace in the process-wide object cache (footers, offset indexes,
	// page locations, dictionaries); the zero Namespace caches nothing.
	Cache cache.Namespace
	// Mem allocates every Arrow buffer a read returns.
	Mem memory.Allocator
	// Schemas shares the schemas of the column lists reads return; nil builds one per read.
	Schemas *Projections
}

// Ref names one fragment: its object's path and size (the size bounds every ranged read).
type Ref struct {
	Path  string
	Bytes int64
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
		return 0, errors.New("fragment: seek before start")
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
	// through a StreamReadBuffer instead of copying their column chunks first: a reader then
	// holds the row group's encoded bytes once.
	accessStream
)

// StreamReadBuffer is how much an accessStream column reader reads at a time: a page or two.
const StreamReadBuffer = 64 << 10

// openFragment opens a fragment for reading as access says. Unless the whole file is fetched,
// reads inside spans (byte ranges the caller fetched already; empty ones are ignored) are served
// from them; without spans, when the footer is cached the byte span of the rowGroups about to
// be read is fetched ahead in one request (a point read then costs one ranged read, not one per
// column chunk). Footers are cached per path (files are immutable).
func (rd *Reader) openFragment(ctx context.Context, f Ref, access fragmentAccess, spans []readWindow, rowGroups ...int) (*pqarrow.FileReader, error) {
	whole, pages := access == accessWhole, access == accessPages
	ft, cached := cache.Get[*Footer](rd.Cache, "footer", f.Path)
	var md *metadata.FileMetaData
	if cached {
		md = ft.md
	}
	var src parquet.ReaderAtSeeker
	var tail readWindow // the object's end, read with the footer (see footerTailRead)
	if whole {
		data, err := rd.Store.Get(ctx, f.Path)
		if err != nil {
			return nil, fmt.Errorf("fragment: read %s: %w", f.Path, err)
		}
		src = bytes.NewReader(data)
	} else {
		or := &objectReader{ctx: ctx, store: rd.Store, key: f.Path, size: f.Bytes}
		for _, w := range spans {
			if w.data != nil {
				or.windows = append(or.windows, w)
			}
		}
		if !cached && f.Bytes > 0 && !objstore.WritesInPlace(rd.Store) {
			// Each request to an object store costs a round trip: the footer's length, the footer
			// and the offset indexes just before it come in one read of the object's end.
			n := min(f.Bytes, footerTailRead)
			data, err := rd.Store.GetRange(ctx, f.Path, f.Bytes-n, n)
			if err != nil {
				return nil, fmt.Errorf("fragment: read %s: %w", f.Path, err)
			}
			if int64(len(data)) != n {
				return nil, fmt.Errorf("fragment: read %s: %w", f.Path, errPage)
			}
			tail = readWindow{at: f.Bytes - n, data: data}
			or.windows = append(or.windows, tail)
		}
		if cached && len(rowGroups) > 0 {
			if len(or.windows) == 0 {
				w, err := rd.rowGroupWindow(ctx, f, md, rowGroups)
				if err != nil {
					return nil, err
				}
				if w.data != nil {
					or.windows = append(or.windows, w)
				}
			}
			if pages && len(rowGroups) == 1 {
				w, err := rd.offsetIndexWindow(ctx, f, md, rowGroups[0])
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
	props := parquet.NewReaderProperties(rd.Mem)
	switch access {
	case accessPages:
		// Point reads: column readers pull pages through a small buffer (the page index takes
		// them to the page holding the row) instead of copying whole column chunks first.
		props.BufferedStreamEnabled, props.BufferSize = true, pointReadBuffer
	case accessStream:
		props.BufferedStreamEnabled, props.BufferSize = true, StreamReadBuffer
	}
	opts := []file.ReadOption{file.WithReadProps(props)}
	if cached {
		opts = append(opts, file.WithMetadata(md))
	}
	pf, err := file.NewParquetReader(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("fragment: open %s: %w", f.Path, err)
	}
	if !cached {
		// The decoded footer is a few times its Thrift encoding.
		ft := newFooter(pf.MetaData())
		cache.Add(rd.Cache, "footer", f.Path, ft, 4*int64(pf.MetaData().Size())+8*int64(len(ft.rowStarts)))
		if tail.data != nil {
			rd.keepOffsetIndexes(f, pf.MetaData(), tail)
		}
	}
	// String and binary columns reserve their values' bytes up front, from the row group's
	// uncompressed size (fragments are written by this package, so the footer is trusted), instead
	// of growing a buffer by doublings that each allocate, zero and copy.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: ScanBatchRows, PreAllocBinaryData: true}, rd.Mem)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("fragment: open %s: %w", f.Path, err)
	}
	return fr, nil
}

// rowGroupWindow fetches the byte span of the row groups in one ranged read (an empty window
// when the footer does not describe them).
func (rd *Reader) rowGroupWindow(ctx context.Context, f Ref, md *metadata.FileMetaData, rowGroups []int) (readWindow, error) {
	start, end, ok := rowGroupSpan(md, rowGroups)
	if !ok {
		return readWindow{}, nil
	}
	data, err := rd.Store.GetRange(ctx, f.Path, start, end-start)
	if err != nil {
		return readWindow{}, fmt.Errorf("fragment: read %s: %w", f.Path, err)
	}
	if int64(len(data)) != end-start {
		return readWindow{}, fmt.Errorf("fragment: read %s: %w", f.Path, errPage)
	}
	return readWindow{at: start, data: data}, nil
}

// footerTailRead is how much of a fragment's end one read fetches when its footer is not cached,
// on a store that does not write in place (an object store): the footer of a fragment this package
// writes, and the offset indexes before it, usually fit.
const footerTailRead = 64 << 10

// keepOffsetIndexes caches, from tail (the bytes read at the end of f), the offset indexes of
// every row group that lie wholly within it, as offsetIndexWindow would read them: a point read
// after the footer then needs no request for them.
func (rd *Reader) keepOffsetIndexes(f Ref, md *metadata.FileMetaData, tail readWindow) {
	for rg := range md.NumRowGroups() {
		start, end, ok := offsetIndexSpan(md, rg)
		if !ok || start < tail.at || end > tail.at+int64(len(tail.data)) {
			continue
		}
		w := readWindow{at: start, data: bytes.Clone(tail.data[start-tail.at : end-tail.at])}
		cache.Add(rd.Cache, "offset_index", offsetIndexKey(f, rg), w, int64(len(w.data)))
	}
}

// offsetIndexSpan is the byte range of row group rg's offset indexes (ok=false when some column
// has none, or the footer does not describe them).
func offsetIndexSpan(md *metadata.FileMetaData, rg int) (start, end int64, ok bool) {
	if rg < 0 || rg >= md.NumRowGroups() {
		return 0, 0, false
	}
	start, end = int64(math.MaxInt64), int64(-1)
	meta := md.RowGroup(rg)
	for c := 0; c < meta.NumColumns(); c++ {
		cc, err := meta.ColumnChunk(c)
		if err != nil {
			return 0, 0, false
		}
		loc := cc.GetOffsetIndexLocation()
		if loc == nil {
			return 0, 0, false
		}
		start, end = min(start, loc.Offset), max(end, loc.Offset+int64(loc.Length))
	}
	return start, end, start >= 0 && end > start
}

func offsetIndexKey(f Ref, rg int) string { return f.Path + "#offset-index-" + strconv.Itoa(rg) }

// offsetIndexWindow returns the bytes of row group rg's offset indexes (every column's, stored
// together after the row groups), from the object cache when possible: a point read seeks
// through them to the page holding its row, and they never change. A fragment written without a
// page index gives an empty window.
func (rd *Reader) offsetIndexWindow(ctx context.Context, f Ref, md *metadata.FileMetaData, rg int) (readWindow, error) {
	key := offsetIndexKey(f, rg)
	if w, ok := cache.Get[readWindow](rd.Cache, "offset_index", key); ok {
		return w, nil
	}
	start, end, ok := offsetIndexSpan(md, rg)
	if !ok || end > f.Bytes {
		return readWindow{}, nil
	}
	data, err := rd.Store.GetRange(ctx, f.Path, start, end-start)
	if err != nil {
		return readWindow{}, fmt.Errorf("fragment: read %s: %w", f.Path, err)
	}
	w := readWindow{at: start, data: data}
	cache.Add(rd.Cache, "offset_index", key, w, int64(len(data)))
	return w, nil
}

// Footer returns a fragment's Parquet footer, from the cache when possible.
func (rd *Reader) Footer(ctx context.Context, f Ref) (*Footer, error) {
	if ft, ok := cache.Get[*Footer](rd.Cache, "footer", f.Path); ok {
		return ft, nil
	}
	fr, err := rd.openFragment(ctx, f, accessRanges, nil)
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
