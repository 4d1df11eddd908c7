// Page fetches for point reads: the byte ranges of the pages a point read decodes, coalesced
// and read concurrently, instead of the whole row group's span. A row group is up to ~2 MiB while
// a point read decodes one page per column (a few KiB each, about 32 KiB at most), so fetching only
// those pages cuts what each get reads, allocates and leaves to the collector several times
// over; a range not fetched up front (a dictionary page not yet cached) is read on first use.
package table

import (
	"context"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"
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
	t       *Table
	f       Fragment
	windows []readWindow
}

// spanWindows wraps an already fetched span (the whole row group).
func (t *Table) spanWindows(ctx context.Context, f Fragment, span readWindow) *pageWindows {
	return &pageWindows{ctx: ctx, t: t, f: f, windows: []readWindow{span}}
}

// fetchPages reads ranges of fragment f: sorted, coalesced across gaps under pageFetchGap,
// each run one ranged read, the runs concurrently.
func (t *Table) fetchPages(ctx context.Context, f Fragment, ranges []byteRange) (*pageWindows, error) {
	w := &pageWindows{ctx: ctx, t: t, f: f}
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
	if len(runs) == 1 {
		data, err := w.read(runs[0])
		w.windows[0] = readWindow{at: runs[0].at, data: data}
		return w, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range runs {
		g.Go(func() error {
			data, err := w.readWith(gctx, r)
			w.windows[i] = readWindow{at: r.at, data: data}
			return err
		})
	}
	return w, g.Wait()
}

func (w *pageWindows) read(r byteRange) ([]byte, error) { return w.readWith(w.ctx, r) }

func (w *pageWindows) readWith(ctx context.Context, r byteRange) ([]byte, error) {
	if r.at < 0 || r.n < 0 || r.at+r.n > w.f.Bytes {
		return nil, errPage
	}
	data, err := w.t.store.GetRange(ctx, w.f.Path, r.at, r.n)
	if err != nil {
		return nil, fmt.Errorf("table: read fragment %s: %w", w.f.Path, err)
	}
	if int64(len(data)) != r.n {
		return nil, fmt.Errorf("table: read fragment %s: %w", w.f.Path, errPage)
	}
	return data, nil
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
	data, err := w.read(byteRange{at, n})
	if err != nil {
		return nil, err
	}
	w.windows = append(w.windows, readWindow{at: at, data: data})
	return data, nil
}
