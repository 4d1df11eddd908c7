package table

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// KeysAfter yields exactly the live keys after the cursor, in order, whether they are indexed or
// not, and ReadRows returns their rows in the order asked.
func TestKeysAfterAndReadRowsAgreeWithAFullScan(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	rng := rand.New(rand.NewPCG(3, 4))
	seq := uint64(0)
	for b := range 12 {
		var rows []row
		for range 40 {
			seq++
			rows = append(rows, row{id: fmt.Sprintf("k%03d", rng.IntN(200)), value: int64(seq), seq: seq, tombstone: rng.IntN(10) == 0})
		}
		upsertRows(t, tbl, mem, rows)
		switch b {
		case 4:
			_, err := tbl.BuildKeyIndex(ctx) // fragments before this are indexed, after it too
			require.NoError(t, err)
		case 8:
			_, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2})
			require.NoError(t, err)
		}
	}
	for _, covered := range []bool{true, false} {
		latest, err := tbl.Latest(ctx)
		require.NoError(t, err)
		m := latest
		if !covered {
			copied := *latest
			copied.KeyIndex = nil // read the same version as if it had no index
			m = &copied
		}
		want := scanAll(t, tbl, m)
		ids := sortedIDs(want)
		for _, after := range []string{"", "k050", "k1", "k199", "zzz"} {
			var got []RowRef
			require.NoError(t, tbl.KeysAfter(ctx, m, after, func(r RowRef) bool {
				if !r.Tombstone {
					got = append(got, r)
				}
				return true
			}))
			var wantIDs []string
			for _, id := range ids {
				if id > after {
					wantIDs = append(wantIDs, id)
				}
			}
			var gotIDs []string
			for _, r := range got {
				gotIDs = append(gotIDs, r.Key)
			}
			require.Equal(t, wantIDs, gotIDs, "after %q covered=%v", after, covered)
			if len(got) == 0 {
				continue
			}
			page := got[:min(len(got), 17)]
			rec, err := tbl.ReadRows(ctx, m, page, []string{"id", "value"})
			require.NoError(t, err)
			require.EqualValues(t, len(page), rec.NumRows())
			for i, r := range page {
				require.Equal(t, r.Key, rec.Column(0).(*array.String).Value(i))
				require.Equal(t, want[r.Key].value, rec.Column(1).(*array.Int64).Value(i))
			}
			rec.Release()
			// Out of order with a row twice (a Take), and a single row (returned as read).
			for _, refs := range [][]RowRef{append([]RowRef{page[len(page)-1]}, page...), page[:1]} {
				rec, err := tbl.ReadRows(ctx, m, refs, []string{"id"})
				require.NoError(t, err)
				require.EqualValues(t, len(refs), rec.NumRows())
				for i, r := range refs {
					require.Equal(t, r.Key, rec.Column(0).(*array.String).Value(i))
				}
				rec.Release()
			}
		}
		// Early stop.
		n := 0
		require.NoError(t, tbl.KeysAfter(ctx, m, "", func(RowRef) bool { n++; return n < 5 }))
		require.Equal(t, 5, n)
	}
}

// A long key-order walk over an index reads its pages a growing window at a time: a few range
// reads for a hundred pages, and every key once, in order.
func TestKeyWalksReadIndexPagesAhead(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl := newTestTable(t, counting, mem)
	var rows []row
	for i := range 20_000 {
		rows = append(rows, row{id: fmt.Sprintf("k%06d", i), value: int64(i), payload: "p", seq: 1})
	}
	upsertRows(t, tbl, mem, rows)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	fresh, err := Open(ctx, counting, Options{Allocator: mem}) // a cold cache
	require.NoError(t, err)
	m, err := fresh.Latest(ctx)
	require.NoError(t, err)
	require.True(t, m.IndexCoversAll())
	before := counting.Stats()
	var got []string
	require.NoError(t, fresh.KeysAfter(ctx, m, "k001000", func(r RowRef) bool {
		got = append(got, r.Key)
		return len(got) < 64*100
	}))
	reads := counting.Stats().Sub(before).Reads
	require.Len(t, got, 6400)
	for i, k := range got {
		require.Equal(t, fmt.Sprintf("k%06d", 1001+i), k)
	}
	require.Less(t, reads, int64(15), "100 index pages in %d reads", reads)
}

// A run of consecutive rows (a key range's) comes back as a slice of the row groups decoded —
// within one group and across a boundary — with the right values, whatever the offset.
func TestReadRowsOfAKeyRangeInsideRowGroups(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	payload := string(make([]byte, 4000)) // row groups of about 2 MiB: several in 3,000 rows
	rows := numberedRows(3000, func(int) string { return payload })
	upsertRows(t, tbl, mem, rows)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	var refs []RowRef
	require.NoError(t, tbl.KeysAfter(ctx, m, "", func(r RowRef) bool { refs = append(refs, r); return true }))
	require.Len(t, refs, 3000)
	ft, err := tbl.reader.Footer(ctx, m.Fragments[0].Ref())
	require.NoError(t, err)
	require.Greater(t, ft.RowGroups(), 2, "the test needs several row groups")
	boundary := int(ft.RowGroupStart(1))
	for _, run := range [][2]int{{10, 60}, {boundary - 40, boundary + 40}, {boundary + 1, boundary + 300}, {0, 3000}} {
		want := refs[run[0]:run[1]]
		rec, err := tbl.ReadRows(ctx, m, want, []string{"id", "value"})
		require.NoError(t, err)
		require.EqualValues(t, len(want), rec.NumRows())
		for i, r := range want {
			require.Equal(t, r.Key, rec.Column(0).(*array.String).Value(i), "run %v row %d", run, i)
			require.EqualValues(t, run[0]+i, rec.Column(1).(*array.Int64).Value(i))
		}
		rec.Release()
	}
	// Rows out of key order, across row groups: one take of the rows read, the right values —
	// a few rows read from their pages, and the first row group, wanted whole, decoded whole.
	shuffled := []RowRef{refs[boundary+5], refs[3], refs[2999], refs[boundary-1], refs[4], refs[boundary+5]}
	for i := boundary - 1; i >= 0; i-- {
		shuffled = append(shuffled, refs[i])
	}
	rec, err := tbl.ReadRows(ctx, m, shuffled, []string{"id", "value"})
	require.NoError(t, err)
	require.EqualValues(t, len(shuffled), rec.NumRows())
	for i, r := range shuffled {
		require.Equal(t, r.Key, rec.Column(0).(*array.String).Value(i), "row %d", i)
	}
	rec.Release()
	// A row of a fragment the version does not have is an error, not some other row.
	_, err = tbl.ReadRows(ctx, m, []RowRef{refs[0], {Key: "x", Fragment: m.Fragments[0].ID + 100, Row: 0}}, []string{"id"})
	require.ErrorContains(t, err, "has no fragment")
}

// A page of a listing (a few consecutive rows of a large row group) decodes and fetches only
// the pages holding its rows, not the row group: its rows come back right, for a fraction of
// the row group's bytes.
func TestAFewRowsOfALargeRowGroupAreReadFromTheirPagesOnly(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl := newTestTable(t, counting, mem)
	rng := rand.New(rand.NewPCG(4, 4))
	rows := numberedRows(3000, func(i int) string { return fmt.Sprintf("%05d", i) + randomLetters(rng, 500) })
	upsertRows(t, tbl, mem, rows)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	var refs []RowRef
	require.NoError(t, tbl.KeysAfter(ctx, m, "", func(r RowRef) bool { refs = append(refs, r); return true }))
	ft, err := tbl.reader.Footer(ctx, m.Fragments[0].Ref())
	require.NoError(t, err)
	require.Equal(t, 1, ft.RowGroups(), "the case under test: one large row group")
	groupBytes := ft.Metadata().RowGroup(0).TotalCompressedSize()

	// 1000-1400: parallelRunRows or more, so its columns decode concurrently.
	for _, run := range [][2]int{{0, 40}, {1500, 1600}, {2900, 3000}, {1000, 1400}} {
		want := refs[run[0]:run[1]]
		before := counting.Stats()
		rec, err := tbl.ReadRows(ctx, m, want, nil)
		require.NoError(t, err)
		io := counting.Stats().Sub(before)
		read := io.ReadBytes
		t.Logf("rows %v: %d reads, %d bytes", run, io.Reads, read)
		require.EqualValues(t, len(want), rec.NumRows())
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.String)
		payloads := rec.Column(rec.Schema().FieldIndices("payload")[0]).(*array.String)
		for i := range want {
			require.Equal(t, rows[run[0]+i].id, ids.Value(i))
			require.Equal(t, rows[run[0]+i].payload, payloads.Value(i))
		}
		rec.Release()
		require.Less(t, read, groupBytes/4, "rows %v read %d bytes of a %d-byte row group", run, read, groupBytes)
	}
}

// A run of rows whose every requested column is null in its row group reads no page at all.
func TestARunOfRowsOfOnlyNullColumnsReadsNoPage(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl := newTestTable(t, counting, mem)
	schema := arrow.NewSchema(append(testSchema.Fields(),
		arrow.Field{Name: SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean}), nil)
	b := array.NewRecordBuilder(mem, schema)
	for i := range 3000 {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("k%05d", i))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).AppendNull()
		b.Field(3).(*array.Uint64Builder).Append(1)
		b.Field(4).(*array.BooleanBuilder).Append(false)
	}
	rec := b.NewRecordBatch()
	b.Release()
	_, err := tbl.Upsert(ctx, rec, UpsertOptions{})
	rec.Release()
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	var refs []RowRef
	require.NoError(t, tbl.KeysAfter(ctx, m, "", func(r RowRef) bool { refs = append(refs, r); return true }))
	got, err := tbl.ReadRows(ctx, m, refs[100:200], []string{"payload"}) // footers and page index cached
	require.NoError(t, err)
	got.Release()

	before := counting.Stats()
	got, err = tbl.ReadRows(ctx, m, refs[1000:1100], []string{"payload"})
	require.NoError(t, err)
	defer got.Release()
	require.EqualValues(t, 100, got.NumRows())
	require.Equal(t, 100, got.Column(0).NullN())
	require.Zero(t, counting.Stats().Sub(before).Reads, "no page read for a column null in every row")
}
