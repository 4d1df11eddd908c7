package table

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// A merge's fragment is gathered and encoded a row group at a time: beyond the batch it merges,
// the Arrow memory it holds is about a row group or two (the first rows gathered choose the
// layout), not a second copy of the rows it writes, for narrow rows and for wide ones alike.
func TestAWrittenFragmentGathersOneRowGroupAtATime(t *testing.T) {
	for _, shape := range []struct{ rows, payloadBytes int }{{20_000, 1000}, {400, 64 << 10}} {
		t.Run(fmt.Sprintf("%dx%dB", shape.rows, shape.payloadBytes), func(t *testing.T) {
			mem := &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
			defer mem.AssertSize(t, 0)
			tbl := newTestTable(t, objstoretest.NewMemory(), mem)
			in := make([]row, shape.rows)
			for i := range in {
				in[i] = row{id: fmt.Sprintf("k%06d", i), value: int64(i), payload: strings.Repeat(string(rune('a'+i%26)), shape.payloadBytes), seq: uint64(i + 1)}
			}
			rec := batch(mem, in)
			defer rec.Release()
			var batchBytes int64
			for _, c := range rec.Columns() {
				batchBytes += int64(c.Data().SizeInBytes())
			}

			before := mem.CurrentAlloc()
			mem.peak = before
			_, err := tbl.Upsert(context.Background(), rec, UpsertOptions{})
			require.NoError(t, err)
			extra := int64(mem.peak - before)
			require.Less(t, extra, batchBytes/2, "an upsert of %d bytes held %d more bytes at its peak", batchBytes, extra)
			m, err := tbl.Latest(context.Background())
			require.NoError(t, err)
			require.Len(t, scanAll(t, tbl, m), shape.rows)
		})
	}
}

// Gathered a row group at a time, a fragment keeps the layout of one encoded whole: row groups
// of one length (rowGroupLength of its rows), only the last one shorter.
func TestAFragmentWrittenByRowGroupsHasRowGroupsOfOneLength(t *testing.T) {
	store := objstoretest.NewMemory()
	tbl := newTestTable(t, store, checkedAlloc(t))
	for _, rows := range []int{10, 1865, 4096, 4097, 50_000} {
		in := make([]row, rows)
		for i := range in {
			in[i] = row{id: fmt.Sprintf("r%05d-%07d", rows, i), value: int64(i % 7), payload: strings.Repeat(string(rune('a'+i%26)), 200+i%100), seq: uint64(i + 1)}
		}
		upsertRows(t, tbl, tbl.mem, in)
	}
	m, err := tbl.Latest(context.Background())
	require.NoError(t, err)
	require.Len(t, m.Fragments, 5)
	for _, f := range m.Fragments {
		data, err := store.Get(context.Background(), f.Path)
		require.NoError(t, err)
		pf, err := file.NewParquetReader(bytes.NewReader(data))
		require.NoError(t, err)
		md := pf.MetaData()
		var total int64
		for i := range md.NumRowGroups() {
			n := md.RowGroup(i).NumRows()
			total += n
			if i < md.NumRowGroups()-1 {
				require.Equal(t, md.RowGroup(0).NumRows(), n, "%s: row group %d of %d", f.Path, i, md.NumRowGroups())
			} else {
				require.LessOrEqual(t, n, md.RowGroup(0).NumRows())
			}
		}
		require.Equal(t, f.Rows, total)
		require.NoError(t, pf.Close())
	}
}
