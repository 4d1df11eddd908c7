package table

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/fragment"
	"github.com/strata-store/strata/storage/objstore"
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

// An upsert of fewer rows than UncompressedBelowRows (a WAL merge passes the compaction's target)
// writes its fragment uncompressed, since compaction rewrites it with its size tier; the
// compaction's output is compressed, a larger upsert's too, and every row reads back the same from
// each (point reads and scans).
func TestAMergesSmallFragmentIsUncompressedUntilCompactionCompressesIt(t *testing.T) {
	ctx := context.Background()
	store := objstoretest.NewMemory()
	mem := checkedAlloc(t)
	tbl := newTestTable(t, store, mem)
	codec := func(f Fragment) compress.Compression { t.Helper(); return fragmentCodecOf(t, store, f) }
	want := map[string]row{}
	upsert := func(first, n int, uncompressedBelow int64) Fragment {
		t.Helper()
		in := make([]row, n)
		for i := range in {
			in[i] = row{id: fmt.Sprintf("k%05d", first+i), value: int64(i), payload: strings.Repeat("merge text ", 20+i%7), seq: uint64(first + i + 1)}
			want[in[i].id] = in[i]
		}
		rec := batch(mem, in)
		defer rec.Release()
		return upsertAddingFragment(t, tbl, rec, UpsertOptions{Merge: true, UncompressedBelowRows: uncompressedBelow})
	}
	check := func() {
		t.Helper()
		m, err := tbl.Latest(ctx)
		require.NoError(t, err)
		require.Equal(t, want, scanAll(t, tbl, m))
		for _, id := range []string{"k00000", "k00777", "k01499"} {
			rec, err := tbl.Get(ctx, m, id, nil)
			require.NoError(t, err)
			require.EqualValues(t, 1, rec.NumRows(), id)
			require.Equal(t, want[id].payload, rec.Column(rec.Schema().FieldIndices("payload")[0]).ValueStr(0), id)
			rec.Release()
		}
	}

	for at := 0; at < 1500; at += 500 {
		require.Equal(t, compress.Codecs.Uncompressed, codec(upsert(at, 500, 1000)), "a 500-row merge under a 1,000-row target")
	}
	check()
	big := upsert(1500, 1000, 1000)
	require.Equal(t, fragment.Codec, codec(big), "a merge that reaches the target is compressed")
	direct := upsert(2500, 100, 0)
	require.Equal(t, fragment.Codec, codec(direct), "an upsert that does not ask for it is compressed")

	res, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 1000, EverySmallFragment: true})
	require.NoError(t, err)
	require.Positive(t, res.FragmentsAdded)
	for _, f := range res.Manifest.Fragments {
		require.Equal(t, fragment.Codec, codec(f), "fragment %s after compaction", f.Path)
	}
	check()
}

// A merge's uncompressed fragment is marked so in the manifest, and once the table has been idle
// for CompressIdleAfter the worker's compaction plan (the sweep's: tiers of MinFragments) takes
// it alone and rewrites it compressed; every row reads the same before and after.
func TestAnIdleTablesMergedFragmentIsRewrittenCompressed(t *testing.T) {
	ctx := context.Background()
	store := objstoretest.NewMemory()
	mem := checkedAlloc(t)
	// A clock of its own, far from the real one: Compact must judge idleness by it.
	clock := time.Date(2100, 1, 1, 10, 0, 0, 0, time.UTC)
	tbl, err := Create(ctx, store, testSchema, "id", Options{Allocator: mem, Now: func() time.Time { return clock }})
	require.NoError(t, err)
	in := make([]row, 700)
	want := map[string]row{}
	for i := range in {
		in[i] = row{id: fmt.Sprintf("k%05d", i), value: int64(i), payload: strings.Repeat("idle text ", 10+i%5), seq: uint64(i + 1)}
		want[in[i].id] = in[i]
	}
	rec := batch(mem, in)
	merged := upsertAddingFragment(t, tbl, rec, UpsertOptions{Merge: true, UncompressedBelowRows: 1000})
	rec.Release()
	require.True(t, merged.Uncompressed, "the manifest says the merge wrote it uncompressed")
	require.Equal(t, compress.Codecs.Uncompressed, fragmentCodecOf(t, store, merged))

	// The worker's plan (MinFragments 4), with a byte floor this small fragment passes.
	sweep := CompactionConfig{TargetRowsPerFragment: 1000, CompressIdleMinBytes: 1}
	clock = clock.Add(DefaultCompressIdleAfter / 2)
	sweep.Now = clock
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Empty(t, PlanCompaction(m, sweep).Sources, "not idle long enough")

	clock = clock.Add(DefaultCompressIdleAfter)
	sweep.Now = time.Time{} // Compact plans at the table's clock
	res, err := tbl.Compact(ctx, sweep)
	require.NoError(t, err)
	require.Equal(t, 1, res.FragmentsRemoved)
	require.Len(t, res.Manifest.Fragments, 1)
	f := res.Manifest.Fragments[0]
	require.False(t, f.Uncompressed)
	require.Equal(t, fragment.Codec, fragmentCodecOf(t, store, f))
	require.Less(t, f.Bytes, merged.Bytes)
	require.Equal(t, want, scanAll(t, tbl, res.Manifest))

	sweep.Now = clock.Add(24 * time.Hour)
	require.Empty(t, PlanCompaction(res.Manifest, sweep).Sources, "nothing left to compress")
}

// fragmentCodecOf is the one codec of every column chunk of fragment f.
func fragmentCodecOf(t *testing.T, store objstore.Store, f Fragment) compress.Compression {
	t.Helper()
	data, err := store.Get(context.Background(), f.Path)
	require.NoError(t, err)
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pf.Close()
	seen := map[compress.Compression]int{}
	for g := range pf.MetaData().NumRowGroups() {
		rg := pf.MetaData().RowGroup(g)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			require.NoError(t, err)
			seen[cc.Compression()]++
		}
	}
	require.Len(t, seen, 1, "%s: column chunks by codec", f.Path)
	for c := range seen {
		return c
	}
	return 0
}
