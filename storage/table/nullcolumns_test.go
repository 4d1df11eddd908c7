package table

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/typedrows"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// A fragment does not store the nullable columns null in every one of its rows, flat and nested
// alike, and every read (scans and gets) takes them as null. A compaction stores a
// column when any of its sources holds a value in it, and leaves it out when none does.
func TestFragmentsLeaveOutTheColumnsNullInEveryRow(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	rng := rand.New(rand.NewPCG(7, 8))
	allNull := func() bool { return true }
	someNull := func() bool { return rng.IntN(4) == 0 }
	every := []string{"id", "n", "f", "ts", "big", "tokens", "tags", "meta", "flag", SeqColumn, TombstoneColumn}
	nonNullable := []string{"id", "ts", SeqColumn, TombstoneColumn}

	type table struct {
		*Table
		want map[string][]string // id -> every user column's value, as text
	}
	newTable := func() table {
		tbl, err := Create(ctx, objstoretest.NewMemory(), typedrows.Schema, "id", Options{Allocator: mem})
		require.NoError(t, err)
		return table{tbl, map[string][]string{}}
	}
	// upsert writes rows first..first+n of a batch whose nullable columns are null where null
	// says, and returns the fragment it added.
	upsert := func(tbl table, first, n int, null func() bool) Fragment {
		t.Helper()
		all := typedrows.RowsWith(mem, first+n, rng, null)
		rec := all.NewSlice(int64(first), int64(first+n))
		all.Release()
		defer rec.Release()
		for i := range n {
			var values []string
			for c := range typedrows.Schema.NumFields() {
				values = append(values, rec.Column(c).ValueStr(i))
			}
			tbl.want[rec.Column(0).ValueStr(i)] = values
		}
		return upsertAddingFragment(t, tbl.Table, rec, UpsertOptions{})
	}
	stored := func(tbl table, f Fragment) []string {
		t.Helper()
		ft, err := tbl.reader.Footer(ctx, f.Ref())
		require.NoError(t, err)
		return ft.Columns()
	}
	// compactBoth compacts the table's two fragments into one and returns it.
	compactBoth := func(tbl table) Fragment {
		t.Helper()
		res, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 1 << 20, EverySmallFragment: true})
		require.NoError(t, err)
		require.Equal(t, 2, res.FragmentsRemoved)
		m, err := tbl.Latest(ctx)
		require.NoError(t, err)
		require.Len(t, m.Fragments, 1)
		return m.Fragments[0]
	}
	// check reads every row back by a scan, and some by gets and point reads.
	check := func(tbl table) {
		t.Helper()
		m, err := tbl.Latest(ctx)
		require.NoError(t, err)
		got := map[string][]string{}
		require.NoError(t, tbl.Scan(ctx, m, ScanOptions{}, func(rec arrow.RecordBatch) error {
			require.Equal(t, typedrows.Schema.NumFields(), int(rec.NumCols()))
			for i := range int(rec.NumRows()) {
				var values []string
				for c := range typedrows.Schema.NumFields() {
					values = append(values, rec.Column(c).ValueStr(i))
				}
				got[values[0]] = values
			}
			return nil
		}))
		require.Equal(t, tbl.want, got)
		for _, id := range []string{"k00000", "k00999", "k01000", "k01777"} {
			if tbl.want[id] == nil {
				continue
			}
			rec, err := tbl.Get(ctx, m, id, nil)
			require.NoError(t, err)
			require.EqualValues(t, 1, rec.NumRows(), id)
			for c := range typedrows.Schema.NumFields() {
				require.Equal(t, tbl.want[id][c], rec.Column(c).ValueStr(0), "%s column %s", id, typedrows.Schema.Field(c).Name)
			}
			rec.Release()
		}
	}

	tbl := newTable()
	sparse := upsert(tbl, 1000, 1000, allNull)
	require.Equal(t, slices.Sorted(slices.Values(nonNullable)), stored(tbl, sparse), "a fragment whose nullable columns are all null")
	dense := upsert(tbl, 0, 1000, someNull)
	require.Equal(t, slices.Sorted(slices.Values(every)), stored(tbl, dense), "a fragment with values in every column")
	check(tbl)
	require.Equal(t, slices.Sorted(slices.Values(every)), stored(tbl, compactBoth(tbl)), "compacted with a source holding values")
	check(tbl)

	tbl = newTable()
	upsert(tbl, 0, 1000, allNull)
	upsert(tbl, 1000, 1000, allNull)
	require.Equal(t, slices.Sorted(slices.Values(nonNullable)), stored(tbl, compactBoth(tbl)), "compacted from sources that leave the columns out")
	check(tbl)
	// Point reads of such fragments: storage/fragment's TestPointReadsOfFragmentsThatLeaveOutNullColumns.
}
