package table

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// A search's point reads answer what plain point reads answer, and keep the data pages they
// decode cached: reading the same rows again reads nothing from storage, while plain point
// reads of them still do (they leave the cache to what every read needs).
func TestSearchReadsKeepTheirPagesCached(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl, err := Create(ctx, counting, testSchema, "id", Options{Allocator: mem, Cache: cache.New(64<<20, nil)})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 5))
	upsertRows(t, tbl, mem, numberedRows(20_000, func(int) string { return randomLetters(rng, 100) }))
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	var refs []RowRef
	for _, row := range []int64{17, 4_000, 4_003, 19_990} {
		refs = append(refs, RowRef{Fragment: m.Fragments[0].ID, Row: row})
	}
	read := func(search bool) (*array.String, objstoretest.IOStats) {
		before := counting.Stats()
		fn := tbl.ReadRows
		if search {
			fn = tbl.ReadRowsForSearch
		}
		rec, err := fn(ctx, m, refs, []string{"id", "payload"})
		require.NoError(t, err)
		t.Cleanup(rec.Release)
		return rec.Column(1).(*array.String), counting.Stats().Sub(before)
	}
	plain, _ := read(false) // warms the footer and the page index
	_, cold := read(true)
	require.Positive(t, cold.Reads, "the first search read fetches its pages")
	warm, io := read(true)
	require.Zero(t, io.Reads, "the next one reads them from the cache")
	for i := range refs {
		require.Equal(t, plain.Value(i), warm.Value(i))
	}
	_, io = read(false)
	require.Positive(t, io.Reads, "plain point reads still fetch their pages")
	require.NoError(t, tbl.RowKeys(ctx, m, refs))
	for i, r := range refs {
		require.Equal(t, []string{"k00017", "k04000", "k04003", "k19990"}[i], r.Key)
		require.EqualValues(t, 1, r.Seq)
	}
}
