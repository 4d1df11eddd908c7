package fragment

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/typedrows"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// pointReadSchema and typedRows: a user schema of every column type a point read meets, and
// rows of it (internal/typedrows, shared with the table's tests).
var pointReadSchema = typedrows.Schema

func typedRows(mem memory.Allocator, n int, rng *rand.Rand) arrow.RecordBatch {
	return typedrows.Rows(mem, n, rng)
}

func typedRowsWith(mem memory.Allocator, n int, rng *rand.Rand, null func() bool) arrow.RecordBatch {
	return typedrows.RowsWith(mem, n, rng, null)
}

func TestPointReadsMatchRowGroupDecodesForEveryColumnType(t *testing.T) {
	mem := checkedAlloc(t)
	rng := rand.New(rand.NewPCG(3, 4))
	comparePointReads(t, mem, rng, typedRows(mem, 20000, rng))
}

// Row groups where every nullable column is null, in a fragment that stores such columns (as
// fragments written before they were left out do): the flat ones are answered from column chunk
// statistics without being read, the nested ones are read; both as a whole-group decode.
func TestPointReadsOfColumnsNullInTheWholeRowGroup(t *testing.T) {
	storeEveryColumn = true
	t.Cleanup(func() { storeEveryColumn = false })
	mem := checkedAlloc(t)
	rng := rand.New(rand.NewPCG(5, 6))
	tbl := comparePointReads(t, mem, rng, typedRowsWith(mem, 20000, rng, func() bool { return true }))
	m, err := tbl.Latest(context.Background())
	require.NoError(t, err)
	fr, err := tbl.openFragment(context.Background(), m.Fragments[0], accessPages, nil, 0)
	require.NoError(t, err)
	defer fr.ParquetReader().Close()
	for name, skipped := range map[string]bool{"n": true, "f": true, "big": true, "flag": true,
		"id": false, "ts": false, "tokens": false, "tags": false, "meta": false} {
		require.Equal(t, skipped, allNullInRowGroup(fr, name, 0), name)
	}
	// Only such columns asked for: nothing is read at all.
	names := []string{"big", "n"}
	got, err := tbl.readRowsAt(context.Background(), m.Fragments[0], m.Schema(), names, 0, []int64{1, 7})
	require.NoError(t, err)
	defer got.Release()
	whole, err := tbl.readFragment(context.Background(), m.Fragments[0], m.Schema(), names, []int{0}, false)
	require.NoError(t, err)
	defer whole.Release()
	want, err := takeRows(context.Background(), mem, whole, []int64{1, 7})
	require.NoError(t, err)
	defer want.Release()
	require.True(t, array.RecordEqual(want, got), "want %v\ngot  %v", want, got)
	// Both paths skip such columns, so check the whole-group decode against what was written:
	// every row, typed as the schema says, null.
	require.EqualValues(t, fr.ParquetReader().MetaData().RowGroup(0).NumRows(), whole.NumRows(), "every row of row group 0")
	for i, name := range names {
		col := whole.Column(i)
		require.True(t, arrow.TypeEqual(m.Schema().Field(m.Schema().FieldIndices(name)[0]).Type, col.DataType()), name)
		require.Equal(t, col.Len(), col.NullN(), name)
	}
}

// comparePointReads upserts rec (and releases it), then checks point reads of every row group
// of every fragment against whole-group decodes; it returns the table.
func comparePointReads(t *testing.T, mem memory.Allocator, rng *rand.Rand, rec arrow.RecordBatch) *testTable {
	ctx := context.Background()
	tbl, err := newTestTableOf(t, objstoretest.NewMemory(), pointReadSchema, mem), error(nil)
	require.NoError(t, err)
	_, err = tbl.Upsert(ctx, rec, UpsertOptions{})
	rec.Release()
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	names, err := userColumns(m, nil)
	require.NoError(t, err)
	require.NotEmpty(t, m.Fragments)
	var flat []string
	for _, n := range names {
		if pointReadableType(m.Schema().Field(m.Schema().FieldIndices(n)[0]).Type) {
			flat = append(flat, n)
		}
	}

	pagesCrossed := 0
	for _, f := range m.Fragments {
		ft, err := tbl.fragmentFooter(ctx, f)
		md := ft.md
		require.NoError(t, err)
		require.Greater(t, md.NumRowGroups(), 2, "rows spread over several row groups")
		for rg := range md.NumRowGroups() {
			whole, err := tbl.readFragment(ctx, f, m.Schema(), names, []int{rg}, false)
			require.NoError(t, err)
			wholeFlat, err := tbl.readFragment(ctx, f, m.Schema(), flat, []int{rg}, false)
			require.NoError(t, err)
			n := whole.NumRows()
			picks := [][]int64{{0}, {n - 1}, {rng.Int64N(n)}, {0, n / 2, n - 1}}
			picks = append(picks, []int64{0, 1, 2, 3, 4, n - 1}) // more rows than ReadRows would seek to
			for _, offsets := range picks {
				got, err := tbl.readRowsAt(ctx, f, m.Schema(), names, rg, offsets)
				require.NoError(t, err)
				want, err := takeRows(ctx, mem, whole, offsets)
				require.NoError(t, err)
				require.True(t, array.RecordEqual(want, got), "row group %d rows %v:\nwant %v\ngot  %v", rg, offsets, want, got)
				want.Release()
				got.Release()
				// The flat columns alone are read straight from their pages.
				flatGot, ok, err := tbl.readRowsFromPages(ctx, f, readWindow{}, nil, m.Schema(), flat, rg, pointRuns(offsets))
				require.NoError(t, err)
				require.True(t, ok, "flat columns take the page path")
				flatWant, err := takeRows(ctx, mem, wholeFlat, offsets)
				require.NoError(t, err)
				require.True(t, array.RecordEqual(flatWant, flatGot), "row group %d rows %v (page path):\nwant %v\ngot  %v", rg, offsets, flatWant, flatGot)
				flatWant.Release()
				flatGot.Release()
			}
			// Runs of rows (a listing's page, an item's events): the flat columns page by page,
			// across page boundaries, and every column through readRowRange (the nested ones
			// joined from the general path).
			a := rng.Int64N(n)
			b := a + 1 + rng.Int64N(n-a)
			for _, runs := range [][]rowRun{{{0, n}}, {{a, b - a}}, {{0, 1}, {n / 2, n - n/2}}} {
				var offsets []int64
				for _, r := range runs {
					for o := r.first; o < r.first+r.n; o++ {
						offsets = append(offsets, o)
					}
				}
				got, ok, err := tbl.readRowsFromPages(ctx, f, readWindow{}, nil, m.Schema(), flat, rg, runs)
				require.NoError(t, err)
				require.True(t, ok, "flat columns take the page path")
				want, err := takeRows(ctx, mem, wholeFlat, offsets)
				require.NoError(t, err)
				for i := range got.NumCols() {
					require.NoError(t, array.ValidateFull(got.Column(int(i))), "row group %d runs %v column %d", rg, runs, i)
				}
				require.True(t, array.RecordEqual(want, got), "row group %d runs %v (page path):\nwant %v\ngot  %v", rg, runs, want, got)
				want.Release()
				got.Release()
				pagesCrossed += runsCrossingPages(t, tbl, f, md, rg, runs)
			}
			ranged, err := tbl.readRowRange(ctx, f, m.Schema(), names, rg, a, b-a)
			require.NoError(t, err)
			want := whole.NewSlice(a, b)
			require.True(t, array.RecordEqual(want, ranged), "row group %d rows %d..%d (readRowRange):\nwant %v\ngot  %v", rg, a, b, want, ranged)
			want.Release()
			ranged.Release()
			whole.Release()
			wholeFlat.Release()
		}
	}
	require.Positive(t, pagesCrossed, "some runs span several pages of a column")
	return tbl
}

// runsCrossingPages is how many of runs span two or more data pages of some leaf column of
// row group rg.
func runsCrossingPages(t *testing.T, tbl *testTable, f Ref, md *metadata.FileMetaData, rg int, runs []rowRun) int {
	rp, err := tbl.rowGroupPagesOf(context.Background(), f, md, rg)
	require.NoError(t, err)
	require.NotNil(t, rp)
	crossing := 0
	for _, r := range runs {
		most := 0
		for _, pages := range rp.pages {
			touched := 0
			for i, p := range pages {
				end := int64(math.MaxInt64)
				if i+1 < len(pages) {
					end = pages[i+1].firstRow
				}
				if p.firstRow < r.first+r.n && r.first < end {
					touched++
				}
			}
			most = max(most, touched)
		}
		if most > 1 {
			crossing++
		}
	}
	return crossing
}

func takeRows(_ context.Context, mem memory.Allocator, rec arrow.RecordBatch, offsets []int64) (arrow.RecordBatch, error) {
	parts := make([]arrow.RecordBatch, len(offsets))
	for i, o := range offsets {
		parts[i] = rec.NewSlice(o, o+1)
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	tbl := array.NewTableFromRecords(rec.Schema(), parts)
	defer tbl.Release()
	out := make([]arrow.Array, tbl.NumCols())
	for i := range out {
		col, err := concatChunks(tbl.Column(i).Data(), mem)
		if err != nil {
			return nil, err
		}
		defer col.Release()
		out[i] = col
	}
	return array.NewRecordBatch(rec.Schema(), out, int64(len(offsets))), nil
}

// countedGet gets key (which must exist) at m and returns the object I/O it cost.
func countedGet(t *testing.T, tbl *testTable, m *testManifest, counting *objstoretest.Counting, key string) objstoretest.IOStats {
	t.Helper()
	before := counting.Stats()
	rec, err := tbl.Get(context.Background(), m, key, nil)
	require.NoError(t, err)
	require.NotNil(t, rec)
	require.Equal(t, key, rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.String).Value(0))
	rec.Release()
	return counting.Stats().Sub(before)
}

// A warm point read of narrow rows costs one object read: the pages it decodes lie close
// together and are fetched as one range. The footer and the row group's offset index (the page
// index a seek uses) come from the object cache.
func TestWarmPointReadIsOneObjectRead(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl := newTestTable(t, counting, mem)
	var rows []row
	for i := range 20_000 {
		rows = append(rows, row{id: fmt.Sprintf("k%06d", i), value: int64(i), payload: fmt.Sprintf("payload %d", i), seq: 1})
	}
	upsertRows(t, tbl, mem, rows)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	get := func(key string) int64 { return countedGet(t, tbl, m, counting, key).Reads }
	get("k000010") // warms the footer, the key index and the row group's offset index
	require.EqualValues(t, 1, get("k000011"), "a warm point read fetches its pages in one read")
}

// A warm point read fetches the pages it decodes, not its row group's span: with rows of wide
// text (a row group of many pages in that column) it reads a fraction of the span, and the
// widest column's pages stay near the page size however wide its values are.
func TestWarmPointReadFetchesOnlyThePagesItDecodes(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl := newTestTable(t, counting, mem)
	var rows []row
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range 4_000 {
		text := make([]byte, 250)
		for j := range text {
			text[j] = byte(rng.Uint32())
		}
		rows = append(rows, row{id: fmt.Sprintf("k%06d", i), value: int64(i), payload: hex.EncodeToString(text), seq: 1})
	}
	upsertRows(t, tbl, mem, rows)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	f := m.Fragments[0]
	ft, err := tbl.fragmentFooter(ctx, f)
	require.NoError(t, err)
	start, end, ok := rowGroupSpan(ft.md, []int{0})
	require.True(t, ok)
	rp, err := tbl.rowGroupPagesOf(ctx, f, ft.md, 0)
	require.NoError(t, err)
	payload := ft.flatLeaves["payload"]
	require.Greater(t, len(rp.pages[payload]), 4, "the wide column is cut into pages")
	for _, p := range rp.pages[payload] {
		require.Less(t, p.size, int32(2*dataPageBytes), "pages stay near the page size")
	}
	get := func(key string) objstoretest.IOStats { return countedGet(t, tbl, m, counting, key) }
	get("k000010") // warms the footer, the key index and the row group's pages
	got := get("k000011")
	require.Less(t, got.ReadBytes, (end-start)/2, "a warm point read fetched %d of its row group's %d bytes", got.ReadBytes, end-start)
}

// Dictionary-encoded pages (low-cardinality columns keep their dictionaries) read by the page
// path match whole row-group decodes, as do plain pages of the same fragment.
func TestPagePointReadsOfDictionaryPages(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	rng := rand.New(rand.NewPCG(9, 9))
	labels := []string{"", "system", "user", "assistant", "tool"}
	var rows []row
	for i := range 30_000 {
		rows = append(rows, row{id: fmt.Sprintf("k%06d", i), value: int64(rng.IntN(7)), payload: labels[rng.IntN(len(labels))], seq: 1})
	}
	upsertRows(t, tbl, mem, rows)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	names := []string{"id", "value", "payload"}
	dictionaries := 0
	for _, f := range m.Fragments {
		ft, err := tbl.fragmentFooter(ctx, f)
		require.NoError(t, err)
		for rg := range ft.md.NumRowGroups() {
			for c := range ft.md.RowGroup(rg).NumColumns() {
				cc, err := ft.md.RowGroup(rg).ColumnChunk(c)
				require.NoError(t, err)
				if cc.HasDictionaryPage() {
					dictionaries++
				}
			}
			whole, err := tbl.readFragment(ctx, f, m.Schema(), names, []int{rg}, false)
			require.NoError(t, err)
			n := whole.NumRows()
			for range 20 {
				offsets := []int64{rng.Int64N(n)}
				got, ok, err := tbl.readRowsFromPages(ctx, f, readWindow{}, nil, m.Schema(), names, rg, pointRuns(offsets))
				require.NoError(t, err)
				require.True(t, ok)
				want, err := takeRows(ctx, mem, whole, offsets)
				require.NoError(t, err)
				require.True(t, array.RecordEqual(want, got), "row group %d row %v:\nwant %v\ngot  %v", rg, offsets, want, got)
				want.Release()
				got.Release()
			}
			whole.Release()
		}
	}
	require.Positive(t, dictionaries, "low-cardinality columns are dictionary-encoded")
	// Unique ids are written plain: a dictionary would never pay.
	for _, f := range m.Fragments {
		ft, err := tbl.fragmentFooter(ctx, f)
		require.NoError(t, err)
		for rg := range ft.md.NumRowGroups() {
			cc, err := ft.md.RowGroup(rg).ColumnChunk(ft.flatLeaves["id"])
			require.NoError(t, err)
			require.False(t, cc.HasDictionaryPage(), "row group %d: the id column has a dictionary", rg)
		}
	}
}

// Long values keep no min/max statistics (a footer stays small however long the rows are):
// every min/max a fragment keeps fits maxStatsBytes, while the column's smallest values (the
// most zero-padded) run to thousands of bytes. Such distinct values get no dictionary either.
func TestFragmentStatisticsDropLongValues(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl, err := newTestTableOf(t, objstoretest.NewMemory(), pointReadSchema, mem), error(nil)
	require.NoError(t, err)
	rec := typedRows(mem, 5000, rand.New(rand.NewPCG(4, 4)))
	_, err = tbl.Upsert(ctx, rec, UpsertOptions{})
	rec.Release()
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	for _, f := range m.Fragments {
		ft, err := tbl.fragmentFooter(ctx, f)
		require.NoError(t, err)
		for rg := range ft.md.NumRowGroups() {
			_, stats := leafStats(ft.md.RowGroup(rg), ft.flatLeaves["big"])
			require.NotNil(t, stats, "null counts stay")
			require.True(t, stats.HasNullCount(), "null counts stay")
			require.LessOrEqual(t, len(stats.EncodeMin()), maxStatsBytes, "row group %d", rg)
			require.LessOrEqual(t, len(stats.EncodeMax()), maxStatsBytes, "row group %d", rg)
			// Distinct long values are written plain: a dictionary of them would fill up, and a
			// point read of its rows would decode it.
			cc, _ := leafStats(ft.md.RowGroup(rg), ft.flatLeaves["big"])
			require.False(t, cc.HasDictionaryPage(), "row group %d: the text column has a dictionary", rg)
		}
	}
}

// A fragment whose pages the page path does not read (data pages of version 2, here; written by
// another writer) is read through the general path, with the same rows.
func TestPointReadsOfPagesThePagePathSkips(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	objects := objstoretest.NewMemory()
	tbl := newTestTable(t, objects, mem)
	var rows []row
	for i := range 5000 {
		rows = append(rows, row{id: fmt.Sprintf("k%05d", i), value: int64(i % 3), payload: fmt.Sprintf("p%d", i), seq: uint64(i + 1)})
	}
	rec := batch(mem, rows)
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithMaxRowGroupLength(1000),
		parquet.WithPageIndexEnabled(true), parquet.WithDataPageSize(1<<10))
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	f := Ref{Path: "data/v2.parquet", Bytes: int64(buf.Len())}
	require.NoError(t, objects.Put(ctx, f.Path, buf.Bytes()))
	names := []string{"id", "value", "payload"}
	_, ok, err := tbl.readRowsFromPages(ctx, f, readWindow{}, nil, rec.Schema(), names, 1, pointRuns([]int64{5}))
	require.NoError(t, err)
	require.False(t, ok, "version 2 data pages are not the page path's")
	for _, rg := range []int{0, 3} {
		whole, err := tbl.readFragment(ctx, f, rec.Schema(), names, []int{rg}, false)
		require.NoError(t, err)
		got, err := tbl.readRowsAt(ctx, f, rec.Schema(), names, rg, []int64{0, 7, 999})
		require.NoError(t, err)
		want, err := takeRows(ctx, mem, whole, []int64{0, 7, 999})
		require.NoError(t, err)
		require.True(t, array.RecordEqual(want, got), "want %v\ngot  %v", want, got)
		whole.Release()
		got.Release()
		want.Release()
	}
}

// Row-group pruning is sound: a row group whose rows hold a value is never ruled out for it (for
// every filterable type), and a value beyond every row group's range is ruled out everywhere.
func TestRowGroupPruningNeverRulesOutAPresentValue(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	rng := rand.New(rand.NewPCG(11, 11))
	tbl, err := newTestTableOf(t, objstoretest.NewMemory(), pointReadSchema, mem), error(nil)
	require.NoError(t, err)
	rec := typedRows(mem, 20_000, rng)
	_, err = tbl.Upsert(ctx, rec, UpsertOptions{})
	rec.Release()
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	for _, f := range m.Fragments {
		ft, err := tbl.fragmentFooter(ctx, f)
		require.NoError(t, err)
		for rg := range ft.md.NumRowGroups() {
			whole, err := tbl.readFragment(ctx, f, m.Schema(), []string{"id", "n", "flag"}, []int{rg}, false)
			require.NoError(t, err)
			ids, ns, flags := whole.Column(0).(*array.String), whole.Column(1).(*array.Int32), whole.Column(2).(*array.Boolean)
			for i := 0; i < int(whole.NumRows()); i++ {
				require.True(t, ft.MayHold(rg, "id", ids.Value(i)))
				if ns.IsValid(i) {
					require.True(t, ft.MayHold(rg, "n", int64(ns.Value(i))))
					require.True(t, ft.MayHold(rg, "n", int(ns.Value(i))))
				}
				if flags.IsValid(i) {
					require.True(t, ft.MayHold(rg, "flag", flags.Value(i)))
				}
			}
			whole.Release()
			require.False(t, ft.MayHold(rg, "id", "~beyond every key"))
			require.False(t, ft.MayHold(rg, "n", int64(math.MaxInt32)+1))
			require.False(t, ft.MayHold(rg, "missing", "x"), "a column the fragment lacks is null")
		}
	}
}

// A point read of flat and nested columns together (the page path and pqarrow) still fetches
// its row group's span once.
func TestWarmPointReadOfNestedColumnsIsOneObjectRead(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl, err := newTestTableOf(t, counting, pointReadSchema, mem), error(nil)
	require.NoError(t, err)
	rec := typedRowsWith(mem, 3000, rand.New(rand.NewPCG(8, 8)), func() bool { return false })
	_, err = tbl.Upsert(ctx, rec, UpsertOptions{})
	rec.Release()
	require.NoError(t, err)
	_, err = tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	get := func(key string) int64 {
		before := counting.Stats()
		got, err := tbl.Get(ctx, m, key, nil)
		require.NoError(t, err)
		require.NotNil(t, got)
		require.False(t, got.Column(got.Schema().FieldIndices("tokens")[0]).IsNull(0), "the nested column has a value")
		got.Release()
		return counting.Stats().Sub(before).Reads
	}
	get("k00010")
	require.EqualValues(t, 1, get("k00011"), "a warm point read fetches its row group's span once")
}

// A column chunk whose dictionary outgrew its page limit mid-chunk holds dictionary-encoded
// pages, then PLAIN ones: runs of rows across the switch, read page by page, match whole
// row-group decodes.
func TestRunsAcrossADictionaryFallbackMatchRowGroupDecodes(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	rng := rand.New(rand.NewPCG(4, 2))
	labels := []string{"system", "user", "assistant", "tool"}
	var rows []row
	for i := range 4000 {
		payload := labels[i%len(labels)]
		if i >= 1500 {
			payload = randomLetters(rng, 200) // the dictionary overflows its page limit here
		}
		rows = append(rows, row{id: fmt.Sprintf("k%05d", i), value: int64(i % 3), payload: payload, seq: 1})
	}
	upsertRows(t, tbl, mem, rows)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	names := []string{"id", "value", "payload"}
	switched := 0
	for _, f := range m.Fragments {
		ft, err := tbl.fragmentFooter(ctx, f)
		require.NoError(t, err)
		leaf := ft.flatLeaves["payload"]
		for rg := range ft.md.NumRowGroups() {
			cc, err := ft.md.RowGroup(rg).ColumnChunk(leaf)
			require.NoError(t, err)
			if cc.HasDictionaryPage() && slices.Contains(cc.Encodings(), parquet.Encodings.Plain) {
				switched++
			}
			whole, err := tbl.readFragment(ctx, f, m.Schema(), names, []int{rg}, false)
			require.NoError(t, err)
			n := whole.NumRows()
			for _, run := range []rowRun{{0, n}, {n / 3, n / 3}, {rng.Int64N(n), 1}} {
				got, ok, err := tbl.readRowsFromPages(ctx, f, readWindow{}, nil, m.Schema(), names, rg, []rowRun{run})
				require.NoError(t, err)
				require.True(t, ok)
				want := whole.NewSlice(run.first, run.first+run.n)
				require.True(t, array.RecordEqual(want, got), "row group %d rows %d+%d", rg, run.first, run.n)
				want.Release()
				got.Release()
			}
			whole.Release()
		}
	}
	require.Positive(t, switched, "a chunk switched from dictionary to PLAIN pages")
}

// A point read of a dictionary-encoded column whose dictionary is not cached yet fetches the
// dictionary page with the data page, in one read, not in a second one after the first.
func TestAColdDictionaryIsFetchedWithItsDataPage(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl := newTestTable(t, counting, mem)
	labels := []string{"system", "user", "assistant", "tool"}
	var rows []row
	for i := range 4000 {
		rows = append(rows, row{id: fmt.Sprintf("k%05d", i), value: int64(i), payload: labels[i%len(labels)], seq: 1})
	}
	upsertRows(t, tbl, mem, rows)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	f := m.Fragments[0]
	ft, err := tbl.fragmentFooter(ctx, f)
	require.NoError(t, err)
	cc, err := ft.md.RowGroup(0).ColumnChunk(ft.flatLeaves["payload"])
	require.NoError(t, err)
	require.True(t, cc.HasDictionaryPage(), "the label column keeps its dictionary")
	_, err = tbl.rowGroupPagesOf(ctx, f, ft.md, 0) // the page index, cached
	require.NoError(t, err)

	before := counting.Stats()
	got, ok, err := tbl.readRowsFromPages(ctx, f, readWindow{}, nil, m.Schema(), []string{"payload"}, 0, pointRuns([]int64{2})) // the dictionary, not yet cached
	require.NoError(t, err)
	require.True(t, ok)
	defer got.Release()
	require.Equal(t, labels[2], got.Column(0).(*array.String).Value(0))
	require.EqualValues(t, 1, counting.Stats().Sub(before).Reads, "the dictionary page and the data page in one read")
}

// A fragment that leaves out its nullable columns null in every row (as every fragment written
// now does) is read from its pages alone, nested columns included: they need no decoding through
// the row group. Point reads of it answer what decoding its row groups whole does.
func TestPointReadsOfFragmentsThatLeaveOutNullColumns(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	rng := rand.New(rand.NewPCG(7, 8))
	tbl := newTestTableOf(t, objstoretest.NewMemory(), pointReadSchema, mem)
	rec := typedRowsWith(mem, 1000, rng, func() bool { return true })
	sparse, err := tbl.Upsert(ctx, rec, UpsertOptions{})
	rec.Release()
	require.NoError(t, err)
	ft, err := tbl.Footer(ctx, sparse)
	require.NoError(t, err)
	require.Equal(t, []string{"_seq", "_tombstone", "id", "ts"}, ft.Columns(), "only the columns that are not nullable")
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	names, err := userColumns(m, nil)
	require.NoError(t, err)
	g, err := tbl.newGroupRead(ctx, sparse, Columns{Schema: m.Schema(), Names: names}, 0)
	require.NoError(t, err)
	require.Equal(t, names, g.flat)
	require.Empty(t, g.nested)

	comparePointReads(t, mem, rng, typedRowsWith(mem, 20000, rng, func() bool { return true }))
}
