package table

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// Coalescing covers every page asked for exactly once, in order, inside its range; joins pages
// only across gaps of at most coalesceGap bytes; and never makes a range over coalesceMax bytes
// (unless one page alone is larger).
func TestCoalescedRangesCoverEveryPageWithinTheirBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		var d pageDirectory
		var off int64
		n := 1 + rng.IntN(3000)
		for i := range n {
			length := int64(1 + rng.IntN(8<<10))
			if rng.IntN(100) == 0 {
				length = coalesceMax + int64(rng.IntN(1<<20)) // a page larger than a range
			}
			d.add(pageRef{offset: off, length: length, firstKey: fmt.Sprintf("k%06d", i)})
			off += length
		}
		d.done()
		var pages []int
		for p := range n {
			if rng.IntN(1+trial%50) == 0 {
				pages = append(pages, p)
			}
		}
		gap := int64(coalesceGap)
		if trial%3 == 0 {
			gap = 0 // a store that writes in place: adjacent pages only
		}
		ranges := coalesce(&d, pages, gap)
		var covered []int
		for i, r := range ranges {
			require.NotEmpty(t, r.want)
			if len(r.want) > 1 {
				require.LessOrEqual(t, r.length, int64(coalesceMax), "trial %d range %d", trial, i)
			}
			for j, p := range r.want {
				ref := d.at(p)
				require.GreaterOrEqual(t, ref.offset, r.offset)
				require.LessOrEqual(t, ref.offset+ref.length, r.offset+r.length)
				if j > 0 {
					prev := d.at(r.want[j-1])
					require.LessOrEqual(t, ref.offset-(prev.offset+prev.length), gap, "a gap over the bound was read")
				}
			}
			if i > 0 {
				require.Greater(t, r.offset, ranges[i-1].offset+ranges[i-1].length-1, "ranges do not overlap")
			}
			covered = append(covered, r.want...)
		}
		require.Equal(t, pages, covered, "trial %d: every page once, in order", trial)
	}
	require.Empty(t, coalesce(&pageDirectory{}, nil, coalesceGap))
}

// On an object store, a merge's key lookups cost requests that follow the keys it merges, never
// the table: on a 100k-row table, 200 keys cost at most one read each (fewer where their pages
// lie close), and on a 5k-row table a read or two.
func TestAMergesIndexReadsFollowItsKeysNotTheTable(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	for _, rows := range []int{5_000, 100_000} {
		count := objstoretest.NewCounting(withoutInPlaceWrites{objstoretest.NewMemory()})
		tbl := newTestTable(t, count, mem)
		const chunk = 50_000
		for start := 0; start < rows; start += chunk {
			rs := make([]row, min(chunk, rows-start))
			for i := range rs {
				rs[i] = row{id: fmt.Sprintf("id-%08d", start+i), value: int64(start + i), seq: 1}
			}
			upsertRows(t, tbl, mem, rs)
		}
		_, err := tbl.BuildKeyIndex(ctx)
		require.NoError(t, err)
		m, err := tbl.Latest(ctx)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(uint64(rows), 9))
		keys := map[string]bool{}
		for len(keys) < 200 {
			keys[fmt.Sprintf("id-%08d", rng.IntN(rows))] = true
		}
		sorted := slices.Sorted(maps.Keys(keys))
		before := count.Stats()
		found, err := tbl.indexLookup(ctx, m, sorted)
		require.NoError(t, err)
		require.Len(t, found, len(sorted), "every key is found")
		reads := count.Stats().Sub(before).Reads
		t.Logf("%d rows: %d reads for %d keys", rows, reads, len(sorted))
		require.LessOrEqual(t, reads, int64(len(sorted)+1), "at most one read per key (and a footer)")
		if rows < 10_000 {
			require.LessOrEqual(t, reads, int64(3), "a small table's index is read in a request or two (and a footer)")
		}
	}
}

// A point get from a process with empty caches reads each footer with its length in one request
// on an object store — the key-index run's and the fragment's, and the fragment's offset indexes
// with it — and reads the same rows as on a store that writes in place, in fewer requests.
func TestAColdPointGetOnAnObjectStoreReadsEachFooterInOneRequest(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	inner := objstoretest.NewMemory()
	tbl := newTestTable(t, inner, mem)
	upsertRows(t, tbl, mem, numberedRows(20_000, func(i int) string { return fmt.Sprint("payload-", i) }))
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	coldGet := func(store objstore.Store, id string) (int64, int64) {
		count := objstoretest.NewCounting(store)
		fresh, err := Open(ctx, count, Options{Allocator: mem})
		require.NoError(t, err)
		m, err := fresh.Latest(ctx)
		require.NoError(t, err)
		before := count.Stats()
		rec, err := fresh.Get(ctx, m, id, nil)
		require.NoError(t, err)
		require.NotNil(t, rec)
		defer rec.Release()
		return rec.Column(1).(*array.Int64).Value(0), count.Stats().Sub(before).Reads
	}
	for _, i := range []int{0, 7_777, 19_999} {
		id := fmt.Sprintf("k%05d", i)
		onDisk, diskReads := coldGet(inner, id)
		remote, remoteReads := coldGet(withoutInPlaceWrites{inner}, id)
		require.EqualValues(t, i, onDisk)
		require.EqualValues(t, i, remote)
		// On the object store: the run's end (footer), its page; the fragment's end (footer and
		// offset indexes), its page.
		require.LessOrEqual(t, remoteReads, int64(4), "%s", id)
		require.Less(t, remoteReads, diskReads, "%s: the footers' lengths and offset indexes come with the footers", id)
	}
}

// On an object store, a point lookup that misses an index page reads its 256 KiB block's pages in
// the same request when the run may stay cached: after a few hundred gets, a get reads only its
// row's data, where reading one index page per miss would still miss most pages.
func TestPointGetsMakeAHotRunsIndexResidentQuickly(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	count := objstoretest.NewCounting(withoutInPlaceWrites{objstoretest.NewMemory()})
	tbl := newTestTable(t, count, mem)
	const rows = 100_000
	upsertRows(t, tbl, mem, numberedRows(rows, func(i int) string { return "" }))
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	fresh, err := Open(ctx, count, Options{Allocator: mem})
	require.NoError(t, err)
	m, err := fresh.Latest(ctx)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	gets := func(n int) float64 {
		before := count.Stats()
		for range n {
			i := rng.IntN(rows)
			rec, err := fresh.Get(ctx, m, fmt.Sprintf("k%05d", i), nil)
			require.NoError(t, err)
			require.NotNil(t, rec)
			require.EqualValues(t, i, rec.Column(1).(*array.Int64).Value(0))
			rec.Release()
		}
		return float64(count.Stats().Sub(before).Reads) / float64(n)
	}
	gets(300)
	perGet := gets(300)
	t.Logf("%.2f reads a get once warm", perGet)
	require.Less(t, perGet, 1.2, "a warm get reads its data page and, rarely, an index page")
}
