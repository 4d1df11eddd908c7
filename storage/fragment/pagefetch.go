// Page fetches for point reads: the byte ranges of the pages a point read decodes, coalesced
// and read concurrently, instead of the whole row group's span. A row group is up to ~2 MiB while
// a point read decodes one page per column (a few KiB each, about 32 KiB at most), so fetching only
// those pages cuts what each get reads, allocates and leaves to the collector several times
// over; a range not fetched up front (a dictionary page not yet cached) is read on first use.
package fragment

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

// pageFetchGap: ranges closer than this are read as one (a few KiB more read costs less than
// another request).
const pageFetchGap = 32 << 10

// byteRange is [at, at+n) of an object.
type byteRange struct{ at, n int64 }

// pageWindows are the fetched byte ranges of one fragment, sorted by offset. A slice outside
// them is read from the object on demand (and kept).
type pageWindows struct {
	ctx     context.Context
	rd      *Reader
	f       Ref
	windows []readWindow
	// reuse: reads go into pooled buffers, listed in buffers (nil entries: not pooled), which
	// the caller hands back with release once nothing it read is referenced any more.
	reuse   bool
	buffers []*[]byte
}

// Pooled page buffers. A point read's pages live only until their values are copied into Arrow
// builders (a dictionary page is copied before it is cached), so when the store reads into the
// caller's memory they come from pools by power-of-two size and go back when the read is done,
// instead of a fresh allocation of every page read for every get.
const (
	minPooledPageClass = 12 // 4 KiB
	maxPooledPageClass = 20 // 1 MiB: larger reads are allocated
)

var pageReadPools [maxPooledPageClass + 1]sync.Pool // of *[]byte, by class

// pageClass is the pool class of an n-byte read (-1: not pooled).
func pageClass(n int64) int {
	if n <= 0 || n > 1<<maxPooledPageClass {
		return -1
	}
	return max(minPooledPageClass, bits.Len64(uint64(n-1)))
}

func pooledPageBuffer(class int) *[]byte {
	if p, ok := pageReadPools[class].Get().(*[]byte); ok {
		return p
	}
	b := make([]byte, 1<<class)
	return &b
}

// release hands the pooled buffers back; nothing read through w may be used afterwards.
func (w *pageWindows) release() {
	for i, p := range w.buffers {
		if p != nil {
			pageReadPools[bits.Len64(uint64(cap(*p)-1))].Put(p)
		}
		w.buffers[i] = nil
	}
	w.windows = nil
}

// spanWindows wraps an already fetched span (the whole row group).
func (rd *Reader) spanWindows(ctx context.Context, f Ref, span readWindow) *pageWindows {
	return &pageWindows{ctx: ctx, rd: rd, f: f, windows: []readWindow{span}}
}

// fetchPages reads ranges of fragment f: sorted, coalesced across gaps under pageFetchGap,
// each run one ranged read, the runs concurrently on an object store. reuse: the caller copies what it keeps and
// calls release when done, so the reads may go into pooled buffers.
func (rd *Reader) fetchPages(ctx context.Context, f Ref, ranges []byteRange, reuse bool) (*pageWindows, error) {
	w := &pageWindows{ctx: ctx, rd: rd, f: f, reuse: reuse && objstore.ReadsInto(rd.Store)}
	if len(ranges) == 0 {
		return w, nil
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].at < ranges[j].at })
	runs := []byteRange{ranges[0]}
	for _, r := range ranges[1:] {
		last := &runs[len(runs)-1]
		if r.at <= last.at+last.n+pageFetchGap {
			last.n = max(last.n, r.at+r.n-last.at)
			continue
		}
		runs = append(runs, r)
	}
	w.windows = make([]readWindow, len(runs))
	w.buffers = make([]*[]byte, len(runs))
	if len(runs) == 1 || objstore.WritesInPlace(rd.Store) {
		// One run, or a local disk (its reads come from the page cache in microseconds: a
		// goroutine each would cost more than it overlaps): one after another.
		for i, r := range runs {
			data, buf, err := w.readWith(ctx, r)
			w.windows[i], w.buffers[i] = readWindow{at: r.at, data: data}, buf
			if err != nil {
				return w, err
			}
		}
		return w, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range runs {
		g.Go(func() error { // each goroutine sets its own index only
			data, buf, err := w.readWith(gctx, r)
			w.windows[i], w.buffers[i] = readWindow{at: r.at, data: data}, buf
			return err
		})
	}
	return w, g.Wait()
}

// readWith reads r: into a pooled buffer (returned, to be released) when w reuses them, else
// allocated by the store.
func (w *pageWindows) readWith(ctx context.Context, r byteRange) ([]byte, *[]byte, error) {
	if r.at < 0 || r.n < 0 || r.at+r.n > w.f.Bytes {
		return nil, nil, errPage
	}
	if class := pageClass(r.n); w.reuse && class >= 0 {
		buf := pooledPageBuffer(class)
		n, err := objstore.ReadRangeInto(ctx, w.rd.Store, w.f.Path, r.at, (*buf)[:r.n])
		if err == nil && int64(n) != r.n {
			err = errPage
		}
		if err != nil {
			pageReadPools[class].Put(buf)
			return nil, nil, fmt.Errorf("fragment: read %s: %w", w.f.Path, err)
		}
		return (*buf)[:r.n], buf, nil
	}
	data, err := w.rd.Store.GetRange(ctx, w.f.Path, r.at, r.n)
	if err != nil {
		return nil, nil, fmt.Errorf("fragment: read %s: %w", w.f.Path, err)
	}
	if int64(len(data)) != r.n {
		return nil, nil, fmt.Errorf("fragment: read %s: %w", w.f.Path, errPage)
	}
	return data, nil, nil
}

// slice is bytes [at, at+n) of the fragment: from a fetched window, or read now.
func (w *pageWindows) slice(at, n int64) ([]byte, error) {
	if at < 0 || n < 0 || n > maxPageBytes {
		return nil, errPage
	}
	for _, win := range w.windows {
		if at >= win.at && at+n <= win.at+int64(len(win.data)) {
			return win.data[at-win.at : at-win.at+n], nil
		}
	}
	data, buf, err := w.readWith(w.ctx, byteRange{at, n})
	if err != nil {
		return nil, err
	}
	w.windows = append(w.windows, readWindow{at: at, data: data})
	w.buffers = append(w.buffers, buf)
	return data, nil
}

// cachedPages is fetchPages for a read that keeps its pages (Columns.CachePages): each range
// from the object cache, or read (the missing ones coalesced as fetchPages reads them) and
// cached on its own, a copy of exactly its bytes.
func (rd *Reader) cachedPages(ctx context.Context, f Ref, ranges []byteRange) (*pageWindows, error) {
	w := &pageWindows{ctx: ctx, rd: rd, f: f}
	var missing []byteRange
	for _, r := range ranges {
		if data, ok := cache.Get[[]byte](rd.Cache, "data_page", pageKey(f, r)); ok {
			w.windows = append(w.windows, readWindow{at: r.at, data: data})
		} else {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return w, nil
	}
	fetched, err := rd.fetchPages(ctx, f, slices.Clone(missing), false)
	if err != nil {
		return w, err
	}
	for _, r := range missing {
		data, err := fetched.slice(r.at, r.n)
		if err != nil {
			return w, err
		}
		page := bytes.Clone(data)
		cache.Add(rd.Cache, "data_page", pageKey(f, r), page, int64(len(page))+64)
		w.windows = append(w.windows, readWindow{at: r.at, data: page})
	}
	return w, nil
}

func pageKey(f Ref, r byteRange) string {
	return f.Path + "@" + strconv.FormatInt(r.at, 10) + "+" + strconv.FormatInt(r.n, 10)
}
