package table

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// A merge's fragment is gathered and encoded a row group at a time: beyond the batch it merges,
// the Arrow memory it holds is about one row group and the first rowGroupRows rows (which choose
// the layout), not a second copy of the rows it writes.
func TestAWrittenFragmentGathersOneRowGroupAtATime(t *testing.T) {
	const rows, payloadBytes = 20_000, 1000
	mem := &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	defer mem.AssertSize(t, 0)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	in := make([]row, rows)
	for i := range in {
		in[i] = row{id: fmt.Sprintf("k%06d", i), value: int64(i), payload: strings.Repeat(string(rune('a'+i%26)), payloadBytes), seq: uint64(i + 1)}
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
	require.Len(t, scanAll(t, tbl, m), rows)
}
