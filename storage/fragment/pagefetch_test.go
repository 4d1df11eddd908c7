package fragment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
)

// scribblePagePools overwrites the buffers waiting in the page read pools and the
// decompression pool and reports how many page read buffers it found: a value still pointing
// into one would change.
func scribblePagePools() int {
	found := 0
	var decompressed []*[]byte
	for range 8 {
		p := pageBufferPool.Get().(*[]byte)
		for i := range *p {
			(*p)[i] = 0xEE
		}
		decompressed = append(decompressed, p)
	}
	for _, p := range decompressed {
		pageBufferPool.Put(p)
	}
	for class := minPooledPageClass; class <= maxPooledPageClass; class++ {
		var held []*[]byte
		for range 8 {
			p, ok := pageReadPools[class].Get().(*[]byte)
			if !ok {
				break
			}
			for i := range *p {
				(*p)[i] = 0xEE
			}
			held = append(held, p)
		}
		for _, p := range held {
			pageReadPools[class].Put(p)
		}
		found += len(held)
	}
	return found
}

// A point read over a local store reads its pages into pooled buffers and hands them back when
// it returns: what it returned copies every value (dictionary pages included), so records kept
// across later reads, with the pools' buffers overwritten in between, still hold the values
// written.
func TestPointReadsThroughPooledPageBuffersKeepNoReferenceToThem(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	rng := rand.New(rand.NewPCG(9, 10))
	local := func() objstore.Store {
		s, err := objstore.NewLocal(t.TempDir())
		require.NoError(t, err)
		require.True(t, objstore.ReadsInto(s))
		return s
	}
	typed, err := newTestTableOf(t, local(), pointReadSchema, mem), error(nil)
	require.NoError(t, err)
	rec := typedRows(mem, 20000, rng)
	_, err = typed.Upsert(ctx, rec, UpsertOptions{})
	rec.Release()
	require.NoError(t, err)
	// Low-cardinality columns: dictionary pages.
	labels := newTestTable(t, local(), mem)
	var rows []row
	for i := range 30_000 {
		rows = append(rows, row{id: fmt.Sprintf("k%06d", i), value: int64(rng.IntN(7)), payload: []string{"", "system", "user", "tool"}[rng.IntN(4)], seq: 1})
	}
	upsertRows(t, labels, mem, rows)

	type kept struct{ want, got arrow.RecordBatch }
	var all []kept
	defer func() {
		for _, k := range all {
			k.want.Release()
			k.got.Release()
		}
	}()
	pooled, dictionaries := 0, 0
	for _, tbl := range []*testTable{typed, labels} {
		m, err := tbl.Latest(ctx)
		require.NoError(t, err)
		names, err := userColumns(m, nil)
		require.NoError(t, err)
		var flat []string
		for _, n := range names {
			if pointReadableType(m.Schema().Field(m.Schema().FieldIndices(n)[0]).Type) {
				flat = append(flat, n)
			}
		}
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
				whole, err := tbl.readFragment(ctx, f, m.Schema(), flat, []int{rg}, false)
				require.NoError(t, err)
				n := whole.NumRows()
				for _, offsets := range [][]int64{{0}, {n - 1}, {rng.Int64N(n)}, {0, n / 2, n - 1}} {
					got, ok, err := tbl.readRowsFromPages(ctx, f, readWindow{}, nil, m.Schema(), flat, rg, pointRuns(offsets))
					require.NoError(t, err)
					require.True(t, ok, "flat columns take the page path")
					want, err := takeRows(ctx, mem, whole, offsets)
					require.NoError(t, err)
					all = append(all, kept{want, got})
					pooled += scribblePagePools()
				}
				whole.Release()
			}
		}
	}
	require.Positive(t, pooled, "the reads went through pooled buffers")
	require.Positive(t, dictionaries, "some pages read were dictionary pages")
	for i, k := range all {
		require.True(t, array.RecordEqual(k.want, k.got), "read %d:\nwant %v\ngot  %v", i, k.want, k.got)
	}
}
