// Point and range reads of one row group: flat columns straight from their pages (pageread.go),
// nested ones through pqarrow's column readers seeking through the page index.
package fragment

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"
)

// PointReadRows is the most rows of one row group worth reading by seeking to each (one value
// decoded per column, ReadRowsAt) rather than by decoding the whole row group (ReadRowGroups).
const PointReadRows = 4

// pointReadBuffer is how much a point read's column reader reads at a time.
const pointReadBuffer = 16 << 10

// groupRead is one read of rows of one row group: what every step of the point and range paths
// shares, built once by ReadRowsAt or ReadRowRange (the steps took eight to ten parameters each).
type groupRead struct {
	rd     *Reader
	f      Ref
	ft     *Footer
	rg     int
	schema *arrow.Schema  // the caller's (table) schema: types every column returned
	pages  *rowGroupPages // nil: the fragment has no page index, only the general path reads it
	// span is the row group's bytes when fetched (empty: each path fetches what it reads).
	span readWindow
	// flat are the columns the page path reads (flat ones, and nested ones holding only nulls
	// here); nested the ones pqarrow's column readers read.
	flat, nested []string
	cachePages   bool // Columns.CachePages
}

// newGroupRead looks up row group rg of f and splits names between the two paths.
func (rd *Reader) newGroupRead(ctx context.Context, f Ref, cols Columns, rg int) (*groupRead, error) {
	ft, err := rd.Footer(ctx, f)
	if err != nil {
		return nil, err
	}
	if rg < 0 || rg >= ft.md.NumRowGroups() {
		return nil, fmt.Errorf("fragment: %s has no row group %d", f.Path, rg)
	}
	rp, err := rd.rowGroupPagesOf(ctx, f, ft.md, rg)
	if err != nil {
		return nil, err
	}
	g := &groupRead{rd: rd, f: f, ft: ft, rg: rg, schema: cols.Schema, pages: rp, cachePages: cols.CachePages}
	g.flat, g.nested = splitPageColumns(cols.Schema, ft, rp, cols.Names)
	return g, nil
}

// ReadRowsAt reads the rows at offsets (ascending, within row group rg) of the columns cols
// names: every column seeks to each row and decodes just that value.
func (rd *Reader) ReadRowsAt(ctx context.Context, f Ref, cols Columns, rg int, offsets []int64) (arrow.RecordBatch, error) {
	// Flat columns of a fragment with a page index come straight from their pages
	// (pageread.go), which fetch only the pages they decode; nested ones, and every column of
	// older fragments, through pqarrow, which reads the row group's byte span. When both are
	// needed the span is fetched once, here, and serves both.
	g, err := rd.newGroupRead(ctx, f, cols, rg)
	if err != nil {
		return nil, err
	}
	if len(g.flat) > 0 && len(g.nested) > 0 {
		if g.span, err = rd.rowGroupWindow(ctx, f, g.ft.md, []int{rg}); err != nil {
			return nil, err
		}
	}
	return g.readRuns(ctx, cols.Names, pointRuns(offsets))
}

// readRuns reads runs of the row group as pagesThenGeneral does, the general path served from
// the span too (empty: it fetches what it reads).
func (g *groupRead) readRuns(ctx context.Context, names []string, runs []rowRun) (arrow.RecordBatch, error) {
	return g.pagesThenGeneral(ctx, names, runs, func(names []string) (arrow.RecordBatch, error) {
		return g.readGeneral(ctx, []readWindow{g.span}, names, runs)
	})
}

// pagesThenGeneral reads runs of the row group of names: the flat columns page by page
// (readFromPages, from the span when fetched), the nested ones through general, joined; every
// column through general when the page path cannot read the flat ones.
func (g *groupRead) pagesThenGeneral(ctx context.Context, names []string, runs []rowRun,
	general func(names []string) (arrow.RecordBatch, error)) (arrow.RecordBatch, error) {
	if len(g.flat) == 0 {
		return general(names)
	}
	fromPages, ok, err := g.readFromPages(ctx, g.flat, runs)
	if err != nil {
		return nil, err
	}
	if !ok {
		return general(names)
	}
	if len(g.nested) == 0 {
		return fromPages, nil
	}
	defer fromPages.Release()
	rest, err := general(g.nested)
	if err != nil {
		return nil, err
	}
	defer rest.Release()
	return joinColumns(names, fromPages, rest, fromPages.NumRows()), nil
}

// splitPageColumns splits names into the columns the page path reads (flat ones, and nested
// ones holding only nulls in the row group rp describes; rp nil: no page index) and the nested
// ones the general path reads.
func splitPageColumns(schema *arrow.Schema, ft *Footer, rp *rowGroupPages, names []string) (flat, nested []string) {
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

// readGeneral reads runs of rows (ascending) of the row group through pqarrow's column readers:
// each column seeks to each run (through the page index) and decodes the run's values from the
// pages holding it. spans: bytes of the fragment already fetched (none: the row group's span is
// fetched first).
func (g *groupRead) readGeneral(ctx context.Context, spans []readWindow, names []string, runs []rowRun) (arrow.RecordBatch, error) {
	rd, f, rg := g.rd, g.f, g.rg
	var rows int64
	for _, r := range runs {
		rows += r.n
	}
	fr, err := rd.openFragment(ctx, f, accessPages, spans, rg)
	if err != nil {
		return nil, err
	}
	defer fr.ParquetReader().Close()
	read := storedColumns(fr, names, []int{rg})
	if len(read) == 0 {
		return rd.layoutColumns(nil, rows, g.schema, names)
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
		c, err := readRunsOfColumn(ctx, fr, rd.Mem, f, read[i], rg, runs)
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
		eg, gctx := errgroup.WithContext(ctx)
		eg.SetLimit(runtime.GOMAXPROCS(0))
		for i := range read {
			eg.Go(func() error { return decode(gctx, i) })
		}
		if err := eg.Wait(); err != nil {
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
	return rd.layoutColumns(tbl, rows, g.schema, names)
}

// parallelRunRows: runs of rows reading at least this many rows in all decode their columns
// concurrently (readRowsGeneral).
const parallelRunRows = 256

// readRunsOfColumn decodes the runs of rows of row group rg of column name (nil when the
// fragment does not store it).
func readRunsOfColumn(ctx context.Context, fr *pqarrow.FileReader, mem memory.Allocator, f Ref, name string, rg int, runs []rowRun) (*arrow.Column, error) {
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
		return nil, fmt.Errorf("fragment: read %s: %w", f.Path, err)
	}
	defer cr.Release()
	chunks := make([]arrow.Array, 0, len(runs))
	defer func() { releaseArrays(chunks) }()
	var end int64 // the end of the last run
	single := true
	for _, run := range runs {
		end = max(end, run.first+run.n)
		single = single && run.n == 1
	}
	if nested(fr.Manifest.Fields[fi].Field.Type) && !single {
		// After SeekToRow, pqarrow's reader of a repeated column with null lists reads runs of
		// more than one row misaligned (rows shifted, or a few rows short; one row after a seek
		// is read right): read the row group from its start up to the last run's end once and
		// slice the runs out of it. TestRunsOfANullableListColumnMatchRowGroupDecodes holds it.
		whole, err := nextRows(cr, end, mem)
		if err != nil {
			return nil, fmt.Errorf("fragment: read %s row group %d rows 0+%d: %w", f.Path, rg, end, err)
		}
		defer whole.Release()
		for _, run := range runs {
			chunks = append(chunks, array.NewSlice(whole, run.first, run.first+run.n))
		}
	} else {
		for _, run := range runs {
			if err := cr.SeekToRow(run.first); err != nil {
				return nil, fmt.Errorf("fragment: read %s row group %d row %d: %w", f.Path, rg, run.first, err)
			}
			got, err := nextRows(cr, run.n, mem)
			if err != nil {
				return nil, fmt.Errorf("fragment: read %s row group %d rows %d+%d: %w", f.Path, rg, run.first, run.n, err)
			}
			chunks = append(chunks, got)
		}
	}
	field := *cr.Field()
	chunked := arrow.NewChunked(field.Type, chunks)
	defer chunked.Release()
	return arrow.NewColumn(field, chunked), nil
}

// nested reports whether a column of type t has repetition or nesting (lists, structs, maps).
func nested(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST, arrow.STRUCT, arrow.MAP, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW:
		return true
	}
	return false
}

// nextRows reads the next n rows of a column reader as one array (NextBatch may answer fewer
// than asked: it is called until n are read; fewer rows left is an error).
func nextRows(cr *pqarrow.ColumnReader, n int64, mem memory.Allocator) (arrow.Array, error) {
	var parts []arrow.Array
	defer func() { releaseArrays(parts) }()
	for left := n; left > 0; {
		got, err := cr.NextBatch(left)
		if err != nil {
			if got != nil {
				got.Release()
			}
			return nil, err
		}
		if got.Len() == 0 {
			got.Release()
			return nil, fmt.Errorf("%d rows short", left)
		}
		left -= int64(got.Len())
		for _, c := range got.Chunks() {
			if c.Len() > 0 {
				c.Retain()
				parts = append(parts, c)
			}
		}
		got.Release()
	}
	if len(parts) == 1 {
		out := parts[0]
		parts = nil
		return out, nil
	}
	return array.Concatenate(parts, mem)
}

// RangeReadShare: a row group whose wanted rows lie within at most 1/RangeReadShare of its rows
// is worth reading as that run of rows (ReadRowRange), not decoded whole. A row group is sized for scans
// (about RowGroupBytes); a page of a listing wants a few hundred rows of one.
const RangeReadShare = 2

// ReadRowRange reads rows [first, first+n) of row group rg of the columns cols names, decoding
// only the pages holding them: those pages of every column it reads (and their dictionary pages)
// are fetched first, coalesced, instead of the row group's span. Fragments without a page index
// take the row group whole.
func (rd *Reader) ReadRowRange(ctx context.Context, f Ref, cols Columns, rg int, first, n int64) (arrow.RecordBatch, error) {
	g, err := rd.newGroupRead(ctx, f, cols, rg)
	if err != nil {
		return nil, err
	}
	if g.pages == nil {
		rec, err := rd.ReadRowGroups(ctx, f, cols, []int{rg})
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		return rec.NewSlice(first, first+n), nil
	}
	// Flat columns (most of them) come straight from their pages; nested ones with values
	// through pqarrow's column readers.
	return g.pagesThenGeneral(ctx, cols.Names, []rowRun{{first, n}}, func(names []string) (arrow.RecordBatch, error) {
		return g.rangeGeneral(ctx, names, first, n)
	})
}

// rangeGeneral reads rows [first, first+n) of the row group through pqarrow's column readers:
// the pages holding them of every column it reads (and their dictionary pages) are fetched
// first, coalesced, instead of the row group's span.
func (g *groupRead) rangeGeneral(ctx context.Context, names []string, first, n int64) (arrow.RecordBatch, error) {
	rp := g.pages
	var ranges []byteRange
	for _, name := range names {
		for _, leaf := range g.ft.topLeaves[name] {
			if leaf >= len(rp.pages) || rp.allNull[leaf] {
				continue
			}
			pages := rp.pages[leaf]
			lo := sort.Search(len(pages), func(i int) bool { return pages[i].firstRow > first }) - 1
			hi := sort.Search(len(pages), func(i int) bool { return pages[i].firstRow > first+n-1 }) - 1
			if lo < 0 || hi < lo {
				return nil, fmt.Errorf("fragment: %s row group %d: %w", g.f.Path, g.rg, errPage)
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
		return g.rd.layoutColumns(nil, n, g.schema, names)
	}
	windows, err := g.rd.fetchPages(ctx, g.f, ranges, false) // the general path's decoders may keep slices of them
	if err != nil {
		return nil, err
	}
	return g.readGeneral(ctx, windows.windows, names, []rowRun{{first, n}})
}
