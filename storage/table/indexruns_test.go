package table

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// indexEntries is the number of entries m's key-index runs hold in all.
func indexEntries(m *Manifest) int64 {
	var n int64
	for _, r := range m.KeyIndex.Runs {
		n += r.Entries
	}
	return n
}

// runBound is the most runs tiering leaves for n entries: one per power of tierRatio, and one.
func runBound(n int64) int {
	return 2 + int(math.Ceil(math.Log(float64(max(n, 1)))/math.Log(tierRatio)))
}

// A compaction's run of the fragments it wrote takes in the tail runs that are small beside it
// and drops their entries for the fragments it removed: however many compactions a table goes
// through, its index keeps O(log n) runs and about one entry per live key (every compaction
// used to leave a run of dead entries behind, so the index, the cached run footers and the runs
// a lookup reads grew with the table's age).
func TestCompactionsDoNotLeaveDeadIndexRunsBehind(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	seq := uint64(0)
	for cycle := range 40 {
		var rows []row
		for i := range 30 {
			seq++
			id := fmt.Sprintf("k%05d", cycle*30+i)
			if cycle > 2 && i%5 == 0 {
				id = fmt.Sprintf("k%05d", (cycle*7919+i)%(cycle*30)) // a rewrite of an earlier key
			}
			rows = append(rows, row{id: id, value: int64(cycle), payload: "x", seq: seq})
		}
		upsertRows(t, tbl, mem, rows)
		if cycle%3 == 2 {
			_, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 100_000})
			require.NoError(t, err)
		}
		m, err := tbl.Latest(ctx)
		require.NoError(t, err)
		require.True(t, m.IndexCoversAll())
		live := int64(len(scanAll(t, tbl, m)))
		require.LessOrEqual(t, len(m.KeyIndex.Runs), runBound(live), "cycle %d: %d runs for %d live keys", cycle, len(m.KeyIndex.Runs), live)
		require.LessOrEqual(t, indexEntries(m), live*3/2, "cycle %d: dead index entries pile up", cycle)
		require.NoError(t, tbl.Check(ctx, m))
	}
}

// An incremental index build (fragments the index does not cover yet) also takes in the tail
// runs that are small beside its new run, and lookups still find every key.
func TestAnIncrementalIndexBuildTakesInTheSmallTailRuns(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	for b := range 6 {
		var rows []row
		for i := range 20 {
			rows = append(rows, row{id: fmt.Sprintf("k%03d", b*20+i), value: int64(b), payload: "x", seq: uint64(b*20 + i + 1)})
		}
		upsertRows(t, tbl, mem, rows)
	}
	// Uncover every fragment (as a compaction committed without an index leaves its output) and
	// cover them again in one build: its run of all 120 keys is larger than every tail run.
	_, err = tbl.commitWithRetry(ctx, "test", func(base *Manifest) (*Manifest, error) {
		next := base.next("test", tbl.now())
		next.KeyIndex.Covered = nil
		return next, nil
	})
	require.NoError(t, err)
	before, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Greater(t, len(before.KeyIndex.Runs), 1)
	after, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	require.True(t, after.IndexCoversAll())
	require.Len(t, after.KeyIndex.Runs, 1, "the build merged the runs it found into its own")
	require.EqualValues(t, 120, indexEntries(after), "one entry per key: the duplicates went")
	require.NoError(t, tbl.Check(ctx, after))
	for _, id := range []string{"k000", "k059", "k119"} {
		rec, err := tbl.Get(ctx, after, id, nil)
		require.NoError(t, err)
		require.NotNil(t, rec, id)
		rec.Release()
	}
}

// A merged run replaces its inputs where they stand when they are all still there; when a
// concurrent commit replaced any of them it is appended instead (its entries were live when it
// was built, and lookups skip entries that no longer are).
func TestAMergedRunReplacesItsInputsOnlyWhereTheyStillStand(t *testing.T) {
	a, b, c, d := IndexRun{Path: "a"}, IndexRun{Path: "b"}, IndexRun{Path: "c"}, IndexRun{Path: "d"}
	seg := IndexRun{Path: "merged"}
	require.Equal(t, []IndexRun{a, seg}, replaceRuns([]IndexRun{a, b, c}, []IndexRun{b, c}, seg))
	require.Equal(t, []IndexRun{a, seg, d}, replaceRuns([]IndexRun{a, b, c, d}, []IndexRun{b, c}, seg), "a newer run stays after it")
	require.Equal(t, []IndexRun{a, d, seg}, replaceRuns([]IndexRun{a, d}, []IndexRun{b, c}, seg), "its inputs were merged away meanwhile")
	require.Equal(t, []IndexRun{a, b, d, seg}, replaceRuns([]IndexRun{a, b, d}, []IndexRun{b, c}, seg), "one input is gone")
	require.Equal(t, []IndexRun{a, seg}, replaceRuns([]IndexRun{a}, nil, seg), "nothing merged")
	runs := []IndexRun{a, b, c}
	replaceRuns(runs, []IndexRun{b, c}, seg)
	require.Equal(t, []IndexRun{a, b, c}, runs, "the input slice is not modified")
}

// The merge memory a merge or compaction reserves for its index run covers the run it builds in
// memory: IndexRunFootprint, taken before an upsert whose run takes in the tail runs, is at least
// the merged run's size beyond the new entries, and zero when nothing is merged.
func TestTheIndexRunFootprintCoversTheRunAMergeBuilds(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	seq := uint64(0)
	upsert := func(first, n int) {
		var rows []row
		for i := range n {
			seq++
			rows = append(rows, row{id: fmt.Sprintf("k%06d", first+i), value: 1, payload: "x", seq: seq})
		}
		upsertRows(t, tbl, mem, rows)
	}
	upsert(0, 400) // a large run, then small ones beside it
	upsert(400, 10)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Len(t, m.KeyIndex.Runs, 2)
	require.Zero(t, tbl.IndexRunFootprint(m, 1), "a run of 1 entry beside runs of 400 and 10 merges nothing")
	fp := tbl.IndexRunFootprint(m, 200) // 200 entries take in both runs
	require.Positive(t, fp)
	upsert(410, 200)
	after, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Len(t, after.KeyIndex.Runs, 1, "the upsert's run took in both")
	require.LessOrEqual(t, after.KeyIndex.Runs[0].Bytes, fp+200*64, "the merged run fits in what was reserved for it")
}
