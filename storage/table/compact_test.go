package table

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/compaction"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/fragment"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func frags(rows ...int64) *Manifest {
	m := &Manifest{Version: 9}
	for i, r := range rows {
		m.Fragments = append(m.Fragments, Fragment{ID: uint64(i + 1), Rows: r})
	}
	return m
}

func TestPlanIsBoundedAndPure(t *testing.T) {
	cfg := CompactionConfig{MinFragments: 3, TargetRowsPerFragment: 100, MaxSourceFragments: 4}
	require.Empty(t, PlanCompaction(frags(10, 10), cfg).Sources, "below MinFragments")
	require.Empty(t, PlanCompaction(frags(100, 200), cfg).Sources, "nothing small")
	p := PlanCompaction(frags(50, 10, 500, 20, 30, 40, 5), cfg)
	require.Equal(t, uint64(9), p.Version)
	require.Equal(t, []uint64{2, 4, 5, 7}, p.Sources, "the 4 smallest, by id")

	m := frags(1000, 1000)
	m.Fragments[1].DeletedRows = 300
	require.Equal(t, []uint64{2}, PlanCompaction(m, cfg).Sources, "a heavily deleted fragment is rewritten on its own")
	m.Fragments[1].DeletedRows = 1000
	keep := cfg
	keep.KeepDeletions = true
	require.Empty(t, PlanCompaction(m, keep).Sources, "keeping deletions, not even a wholly deleted fragment is a candidate on its own")
}

// An idle table's fragments written uncompressed are each a candidate on their own, so a table
// that stopped growing before its tier filled still ends compressed; a busy table's wait for
// their tier, and fragments too small to be worth it, or not marked uncompressed (compressed
// ones, and those of manifests written before the mark existed), are never taken for it.
func TestAnIdleTablesUncompressedFragmentsAreCandidatesOnTheirOwn(t *testing.T) {
	committed := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	m := frags(500, 300, 2_000_000)
	m.CreatedAt = committed
	m.Fragments[0].Uncompressed, m.Fragments[0].Bytes = true, 1<<20
	at := func(d time.Duration) CompactionConfig {
		return CompactionConfig{TargetRowsPerFragment: 1000, Now: committed.Add(d)}
	}
	require.Empty(t, PlanCompaction(m, at(time.Minute)).Sources, "busy: the tier is not full")
	require.Empty(t, PlanCompaction(m, at(DefaultCompressIdleAfter-time.Second)).Sources)
	require.Equal(t, []uint64{1}, PlanCompaction(m, at(DefaultCompressIdleAfter)).Sources,
		"idle: the uncompressed fragment alone; the compressed small one waits for its tier")

	never := at(24 * time.Hour)
	never.CompressIdleAfter = -1
	require.Empty(t, PlanCompaction(m, never).Sources, "a negative CompressIdleAfter turns it off")

	sooner := at(2 * time.Minute)
	sooner.CompressIdleAfter = time.Minute
	require.Equal(t, []uint64{1}, PlanCompaction(m, sooner).Sources)

	m.Fragments[0].Bytes = 1<<20 - 1
	require.Empty(t, PlanCompaction(m, at(24*time.Hour)).Sources, "under CompressIdleMinBytes: not worth a compaction")
	small := at(24 * time.Hour)
	small.CompressIdleMinBytes = 1000
	require.Equal(t, []uint64{1}, PlanCompaction(m, small).Sources)

	m.Fragments[0].Uncompressed = false
	require.Empty(t, PlanCompaction(m, small).Sources, "nothing marked uncompressed")

	// With a tier due as well, both go in one pass, the lone candidates first within the cap.
	m = frags(10, 20, 30, 40, 50_000, 60_000)
	m.CreatedAt = committed
	m.Fragments[4].Uncompressed, m.Fragments[5].Uncompressed = true, true
	m.Fragments[4].Bytes, m.Fragments[5].Bytes = 5<<20, 6<<20
	cfg := at(time.Hour)
	cfg.TargetRowsPerFragment, cfg.MaxSourceFragments = 100_000, 4
	require.Equal(t, []uint64{1, 2, 5, 6}, PlanCompaction(m, cfg).Sources)
}

// Small fragments are compacted as a size tier: a fragment much larger than the others waits
// until they add up to half of it, so a table that grows by merges is not rewritten whole on
// every pass. Simulated over a table's life: 400 merges of 1,000 rows, each followed by a
// compaction pass, rewrite each row about 6 times (log of the growth), where compacting every
// small fragment together rewrote it 67 times; the fragment count stays small (at most 6).
func TestCompactionRewritesAGrowingTableLogarithmicallyOften(t *testing.T) {
	cfg := CompactionConfig{MinFragments: 4, TargetRowsPerFragment: 1 << 20}
	require.Equal(t, []uint64{2, 3, 4, 5}, PlanCompaction(frags(30_000, 1000, 1000, 1000, 1000), cfg).Sources,
		"the large fragment waits")
	require.Len(t, PlanCompaction(frags(30_000, 5000, 5000, 5000, 1000), cfg).Sources, 5, "the others hold half of it")
	require.Len(t, PlanCompaction(frags(3, 1, 2, 1), cfg).Sources, 4, "tiny fragments always go")
	require.Empty(t, PlanCompaction(frags(30_000, 4000, 4000, 4000), cfg).Sources, "three are below MinFragments")
	every := cfg
	every.EverySmallFragment = true
	require.Len(t, PlanCompaction(frags(30_000, 1000, 1000, 1000, 1000), every).Sources, 5, "an explicit compaction takes every small fragment")

	m := &Manifest{}
	var inserted, rewritten int64
	maxFragments, nextID := 0, uint64(1)
	for range 400 {
		m.addFragment(Fragment{ID: nextID, Rows: 1000})
		nextID++
		inserted += 1000
		plan := PlanCompaction(m, cfg)
		var out int64
		for _, id := range plan.Sources {
			f, _ := m.Fragment(id)
			out += f.Rows
			m.removeFragment(id)
		}
		if out > 0 {
			rewritten += out
			m.addFragment(Fragment{ID: nextID, Rows: out})
			nextID++
		}
		maxFragments = max(maxFragments, len(m.Fragments))
	}
	var total int64
	for _, f := range m.Fragments {
		total += f.Rows
	}
	require.Equal(t, inserted, total)
	t.Logf("rows rewritten per row inserted: %.1f; at most %d fragments", float64(rewritten)/float64(inserted), maxFragments)
	require.Less(t, float64(rewritten)/float64(inserted), 12.0, "rows rewritten per row inserted")
	require.LessOrEqual(t, maxFragments, 24)
}

func TestCompactionMaterializesDeletionsAndKeepsTheIndexCovering(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	for b := range 10 {
		var rows []row
		for i := range 50 {
			rows = append(rows, row{id: fmt.Sprintf("k%03d", (b*37+i*7)%300), value: int64(b), payload: "x", seq: uint64(b + 1)})
		}
		upsertRows(t, tbl, mem, rows)
		if b == 3 {
			_, err := tbl.BuildKeyIndex(ctx)
			require.NoError(t, err)
		}
	}
	upsertRows(t, tbl, mem, []row{{id: "k007", seq: 100, tombstone: true}})
	before, err := tbl.Latest(ctx)
	require.NoError(t, err)
	want := scanAll(t, tbl, before)
	require.NoError(t, tbl.Check(ctx, before))
	require.Greater(t, before.DeletedRows(), int64(0))

	res, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 200})
	require.NoError(t, err)
	require.Equal(t, 11, res.FragmentsRemoved)
	require.Equal(t, 2, res.FragmentsAdded)
	after := res.Manifest
	require.Len(t, after.Fragments, 2)
	require.Zero(t, after.DeletedRows(), "deletions are materialized")
	require.True(t, after.IndexCoversAll())
	require.Equal(t, want, scanAll(t, tbl, after))
	require.NoError(t, tbl.Check(ctx, after))
	require.EqualValues(t, 1, after.Counters.Compactions)

	// The tombstone survives compaction: an older write still cannot resurrect k007.
	res2 := upsertRows(t, tbl, mem, []row{{id: "k007", value: 1, seq: 99}})
	require.Equal(t, 1, res2.Stale)

	// Nothing left to do.
	res, err = tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 200})
	require.NoError(t, err)
	require.Zero(t, res.FragmentsRemoved)
}

func TestUpsertsCommittedDuringACompactionAreNeitherLostNorResurrected(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	for b := range 6 {
		upsertRows(t, tbl, mem, []row{{id: fmt.Sprintf("a%d", b), value: 1, seq: 1}, {id: fmt.Sprintf("b%d", b), value: 1, seq: 1}})
	}
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	m, _ := tbl.Latest(ctx)
	plan := PlanCompaction(m, CompactionConfig{MinFragments: 2})
	require.Len(t, plan.Sources, 6)

	// A writer replaces a0 and adds c0 after the plan was made but before it runs: the compaction
	// must see the new deletion vector and redo its work rather than copy the old a0 back.
	upsertRows(t, tbl, mem, []row{{id: "a0", value: 2, seq: 2}, {id: "c0", value: 2, seq: 2}})
	res, err := tbl.ExecuteCompaction(ctx, plan)
	require.NoError(t, err)
	rows := scanAll(t, tbl, res.Manifest)
	require.Len(t, rows, 13)
	require.EqualValues(t, 2, rows["a0"].value)
	require.Contains(t, rows, "c0")
	require.NoError(t, tbl.Check(ctx, res.Manifest))
}

// Once a newer latest manifest no longer references them, the footers of replaced fragments,
// their deletion vectors and compacted key-index runs leave the object cache (they would
// otherwise fill it before anything live is evicted).
func TestTheCacheForgetsWhatTheLatestManifestNoLongerReferences(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	for b := range 6 {
		var rows []row
		for i := range 40 {
			rows = append(rows, row{id: fmt.Sprintf("k%03d", (b*13+i*3)%120), value: int64(b), payload: "x", seq: uint64(b + 1)})
		}
		upsertRows(t, tbl, mem, rows)
		_, err := tbl.BuildKeyIndex(ctx)
		require.NoError(t, err)
	}
	before, err := tbl.Latest(ctx)
	require.NoError(t, err)
	scanAll(t, tbl, before) // reads (and caches) every footer and deletion vector
	for _, id := range []string{"k001", "k050", "k119"} {
		rec, err := tbl.Get(ctx, before, id, nil)
		require.NoError(t, err)
		if rec != nil {
			rec.Release()
		}
	}
	cached := func(key string) bool {
		_, ok := cache.Get[any](tbl.cache, "test", key)
		return ok
	}
	var oldPaths []string
	for _, f := range before.Fragments {
		_, err := tbl.reader.Footer(ctx, f.Ref())
		require.NoError(t, err)
		require.True(t, cached(f.Path), "footer of %s cached", f.Path)
		oldPaths = append(oldPaths, f.Path)
	}
	res, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 5000})
	require.NoError(t, err)
	require.Positive(t, res.FragmentsRemoved)
	after, err := tbl.Latest(ctx)
	require.NoError(t, err)
	live := map[string]bool{}
	for _, f := range after.Fragments {
		live[f.Path] = true
	}
	for _, p := range oldPaths {
		if !live[p] {
			require.False(t, cached(p), "the footer of replaced fragment %s is still cached", p)
		}
	}
	require.False(t, cached("v/"+fmt.Sprint(before.Version)), "the superseded manifest is still cached")
	require.Equal(t, scanAll(t, tbl, before), scanAll(t, tbl, after), "old versions still read (from storage)")
}

// peakAllocator records the most bytes allocated through it at once.
type peakAllocator struct {
	*memory.CheckedAllocator
	mu   sync.Mutex
	peak int
}

func (a *peakAllocator) note() {
	a.mu.Lock()
	a.peak = max(a.peak, a.CurrentAlloc())
	a.mu.Unlock()
}

func (a *peakAllocator) Allocate(n int) []byte {
	b := a.CheckedAllocator.Allocate(n)
	a.note()
	return b
}

func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	b = a.CheckedAllocator.Reallocate(n, b)
	a.note()
	return b
}

// A compaction streams its sources: the Arrow memory it holds at once is a decoded batch per source
// and one output row group, not the sources whole (which made a worker's memory grow with its
// tables). Its output is still every live row once, in key order, across fragments bounded by
// the byte target.
func TestCompactionMemoryDoesNotGrowWithTheTable(t *testing.T) {
	skipUnderRace(t)
	ctx := context.Background()
	mem := &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	defer mem.AssertSize(t, 0)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	rng := rand.New(rand.NewPCG(7, 7))
	const fragments, perFragment = 8, 12_000
	var want []string
	for f := range fragments {
		var rows []row
		for i := range perFragment {
			text := randomLetters(rng, 500)
			id := fmt.Sprintf("k%02d-%05d", i%7, f*perFragment+i) // fragments overlap in key range
			if f > 0 && i%10 == 0 {
				id = fmt.Sprintf("k%02d-%05d", (i+1)%7, (f-1)*perFragment+i+1) // a rewrite: a deletion in the fragment before
			} else {
				want = append(want, id)
			}
			rows = append(rows, row{id: id, value: int64(i), payload: text, seq: uint64(f + 1)})
		}
		upsertRows(t, tbl, mem, rows)
	}
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	mem.peak = 0
	base, err := tbl.Latest(ctx)
	require.NoError(t, err)
	plan := PlanCompaction(base, CompactionConfig{MinFragments: 2, TargetBytesPerFragment: 4 << 20})
	res, err := tbl.ExecuteCompaction(ctx, plan)
	require.NoError(t, err)
	require.Equal(t, fragments, res.FragmentsRemoved)
	require.Greater(t, res.FragmentsAdded, 1, "the byte target cuts the output")
	total := int64(fragments * perFragment * 500)
	t.Logf("peak Arrow memory %d for %d bytes of rows (footprint reserved: %d)", mem.peak, total, tbl.CompactionFootprint(base, plan))
	require.Less(t, int64(mem.peak), total/4, "peak Arrow memory %d for %d bytes of rows", mem.peak, total)
	require.Less(t, int64(mem.peak), tbl.CompactionFootprint(base, plan), "the budget reservation covers the compaction's Arrow memory")

	require.NoError(t, tbl.Check(ctx, res.Manifest))
	var got []string
	for _, f := range res.Manifest.Fragments {
		require.LessOrEqual(t, f.Bytes, int64(6<<20), "fragment %d", f.ID)
		ft, err := tbl.reader.Footer(ctx, f.Ref())
		require.NoError(t, err)
		if ft.RowGroups() > 1 { // row groups sized as a merge sizes them (fragment.RowGroupBytes), not cut small
			require.Greater(t, ft.RowsIn(0), int64(500), "fragment %d", f.ID)
		}
	}
	require.NoError(t, tbl.KeysAfter(ctx, res.Manifest, "", func(r RowRef) bool {
		got = append(got, r.Key)
		return true
	}))
	slices.Sort(want)
	require.Equal(t, want, got)
}

// requireBoundedRuns checks that a source cursor over f, read to its end, never held more than
// twice fragment.SequenceBatchBytes of decoded rows at once.
func requireBoundedRuns(t *testing.T, tbl *Table, m *Manifest, f Fragment) {
	t.Helper()
	most := largestRun(t, tbl, m, f)
	t.Logf("largest run held by a source: %d bytes", most)
	require.Less(t, most, int64(2*fragment.SequenceBatchBytes), "a source's largest run")
}

// largestRun is the most decoded bytes one source cursor over f held at once (its current
// batch is a slice of the run it decoded last, whose buffers it keeps), reading f to its end.
func largestRun(t *testing.T, tbl *Table, m *Manifest, f Fragment) int64 {
	t.Helper()
	ctx := context.Background()
	names := make([]string, m.Schema().NumFields())
	for i, fl := range m.Schema().Fields() {
		names[i] = fl.Name
	}
	c, err := tbl.newSourceCursor(ctx, m, f, names)
	require.NoError(t, err)
	defer c.release()
	var most int64
	for {
		ok, err := c.fill(ctx)
		require.NoError(t, err)
		if !ok {
			return most
		}
		most = max(most, decodedBytes(c.cur))
		c.row = int(c.cur.NumRows()) // consumed
	}
}

// A compaction's sources hold about sourceBatchBytes of decoded rows each, whatever the footer
// says of them: rows whose long payload repeats (one dictionary entry, a few bytes per row in
// the file) are decoded a measured run at a time, not a footer-sized batch of a whole row group
// per source (4,000 rows of 950 bytes here).
func TestCompactionSourcesHoldBoundedRunsOfRepeatedLongValues(t *testing.T) {
	skipUnderRace(t)
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	const fragments, perFragment = 16, 4_000
	payload := strings.Repeat("the same long text ", 50) // 950 bytes, in every row
	var want []string
	for f := range fragments {
		var rows []row
		for i := range perFragment {
			id := fmt.Sprintf("k%05d-%02d", i, f) // every source spans the whole key range
			rows = append(rows, row{id: id, value: int64(i), payload: payload, seq: uint64(f + 1)})
			want = append(want, id)
		}
		upsertRows(t, tbl, mem, rows)
	}
	base, err := tbl.Latest(ctx)
	require.NoError(t, err)
	requireBoundedRuns(t, tbl, base, base.Fragments[0])
	plan := PlanCompaction(base, CompactionConfig{MinFragments: 2})
	require.Len(t, plan.Sources, fragments)
	res, err := tbl.ExecuteCompaction(ctx, plan)
	require.NoError(t, err)
	require.NoError(t, tbl.Check(ctx, res.Manifest))
	got := sortedIDs(scanAll(t, tbl, res.Manifest))
	slices.Sort(want)
	require.Equal(t, want, got)
}

// A source's first run, decoded before its width is measured, is cut short when the footer says
// its rows are wide: a source of 64 KiB rows holds a few of them at a time, not firstRunRows.
func TestCompactionSourcesOfWideRowsStartWithShortRuns(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	rng := rand.New(rand.NewPCG(5, 6))
	const fragments, perFragment = 3, 80
	for f := range fragments {
		var rows []row
		for i := range perFragment {
			rows = append(rows, row{id: fmt.Sprintf("k%03d-%d", i, f), value: int64(i), payload: randomLetters(rng, 64<<10), seq: uint64(f + 1)})
		}
		upsertRows(t, tbl, mem, rows)
	}
	base, err := tbl.Latest(ctx)
	require.NoError(t, err)
	requireBoundedRuns(t, tbl, base, base.Fragments[0])
	res, err := tbl.ExecuteCompaction(ctx, PlanCompaction(base, CompactionConfig{MinFragments: 2}))
	require.NoError(t, err)
	require.Equal(t, fragments, res.FragmentsRemoved)
	require.NoError(t, tbl.Check(ctx, res.Manifest))
	require.Len(t, scanAll(t, tbl, res.Manifest), fragments*perFragment)
}

// On a local store a compaction's source fetches the pages of the run it decodes, not its whole
// row group: no read of a source's data file during the compaction is more than a run's worth
// (sources of ~2 MiB row groups; every one was fetched whole, and a compaction of n sources
// held n of them at once), and every live row comes through once.
func TestCompactionSourcesOnALocalStoreFetchARunsPagesNotTheirRowGroup(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	local, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := &objstoretest.ReadSizes{Store: local, Prefix: dataDir}
	tbl := newTestTable(t, store, mem)
	const fragments = 3
	want := fragmentsOfRandomText(t, tbl, fragments, 10_000)
	base, err := tbl.Latest(ctx)
	require.NoError(t, err)
	ft, err := tbl.reader.Footer(ctx, base.Fragments[0].Ref())
	require.NoError(t, err)
	require.Greater(t, ft.Metadata().RowGroup(0).TotalCompressedSize(), int64(fragment.RowGroupBytes/2), "sources of large row groups")

	store.Reset()
	res, err := tbl.ExecuteCompaction(ctx, PlanCompaction(base, CompactionConfig{MinFragments: 2}))
	require.NoError(t, err)
	require.Equal(t, fragments, res.FragmentsRemoved)
	t.Logf("largest read of a data file: %d bytes", store.Largest())
	require.Less(t, store.Largest(), int64(2*fragment.SequenceBatchBytes), "a source read a run's pages")
	require.NoError(t, tbl.Check(ctx, res.Manifest))
	got := sortedIDs(scanAll(t, tbl, res.Manifest))
	slices.Sort(want)
	require.Equal(t, want, got)
}

// A compaction's budget reservation follows its sources' sizes: 32 small fragments reserve less
// than one row group's worth per source (each was charged a row group, column readers and two
// batches whatever its size, and the governor let the heap grow by all of it).
func TestCompactionFootprintFollowsTheSourcesSizes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	const fragments = 32
	for f := range fragments {
		upsertRows(t, tbl, mem, numberedRows(100, func(i int) string { return strings.Repeat("x", 100) })[f*3:f*3+3])
	}
	base, err := tbl.Latest(context.Background())
	require.NoError(t, err)
	plan := PlanCompaction(base, CompactionConfig{MinFragments: 2, EverySmallFragment: true})
	require.Len(t, plan.Sources, fragments)
	footprint := tbl.CompactionFootprint(base, plan)
	t.Logf("footprint %d for %d sources", footprint, fragments)
	require.Less(t, footprint, int64(fragments*fragment.RowGroupBytes))
}

// Fragments written without a page index (by the first releases) are compacted through pqarrow's
// column readers, together with fragments that have one: every live row comes through once.
func TestCompactionReadsFragmentsWithoutAPageIndex(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[string]row{}
	t.Cleanup(func() { writePageIndex = true })
	for f := range 6 {
		writePageIndex = f%2 == 0
		var rows []row
		for i := range 3_000 {
			r := row{id: fmt.Sprintf("k%05d", rng.IntN(12_000)), value: int64(f*10_000 + i), payload: randomLetters(rng, 40+rng.IntN(200)), seq: uint64(f + 1)}
			if i%13 == 0 {
				r.tombstone, r.payload, r.value = true, "", 0
			}
			rows = append(rows, r)
		}
		rows = slices.CompactFunc(slices.SortedStableFunc(slices.Values(rows), func(a, b row) int { return strings.Compare(a.id, b.id) }),
			func(a, b row) bool { return a.id == b.id })
		for _, r := range rows {
			if r.tombstone {
				delete(want, r.id)
			} else {
				want[r.id] = r
			}
		}
		upsertRows(t, tbl, mem, rows)
	}
	writePageIndex = true
	base, err := tbl.Latest(ctx)
	require.NoError(t, err)
	plan := PlanCompaction(base, CompactionConfig{MinFragments: 2, EverySmallFragment: true})
	require.Greater(t, len(plan.Sources), 3)
	withIndex := map[bool]int{}
	for _, id := range plan.Sources {
		f, _ := base.Fragment(id)
		indexed, err := tbl.reader.HasPageIndex(ctx, f.Ref(), 0)
		require.NoError(t, err)
		withIndex[indexed]++
	}
	require.Positive(t, withIndex[false], "sources without a page index")
	require.Positive(t, withIndex[true], "sources with one")
	res, err := tbl.ExecuteCompaction(ctx, plan)
	require.NoError(t, err)
	require.NoError(t, tbl.Check(ctx, res.Manifest))
	got := scanAll(t, tbl, res.Manifest)
	require.Len(t, got, len(want))
	for id, r := range want {
		require.Equal(t, r.value, got[id].value, id)
		require.Equal(t, r.payload, got[id].payload, id)
	}
}

// A compaction that fails part-way (a source read fails after some of the output was encoded)
// frees every buffer it held, deletes what it wrote and leaves the table as it was.
func TestAFailedCompactionFreesWhatItHeldAndChangesNothing(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	faulty := objstoretest.NewFaulty(counting)
	tbl := newTestTable(t, faulty, mem)
	rng := rand.New(rand.NewPCG(9, 9))
	for f := range 3 { // fragments of several row groups: a compaction reads on after it stored output
		var rows []row
		for i := range 12_000 {
			text := randomLetters(rng, 300)
			rows = append(rows, row{id: fmt.Sprintf("k%05d-%d", i, f), value: int64(i), payload: text, seq: 1})
		}
		upsertRows(t, tbl, mem, rows)
	}
	before, err := tbl.Latest(ctx)
	require.NoError(t, err)
	// The first source read after an output fragment was stored fails.
	writes := counting.Stats().Writes
	faulty.AddRule(objstoretest.Rule{Err: errors.New("injected read failure"), Match: func(op objstoretest.Op, key string) bool {
		return op == objstoretest.OpGetRange && strings.HasPrefix(key, dataDir) && counting.Stats().Writes > writes
	}})
	_, err = tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 20_000})
	require.ErrorContains(t, err, "injected read failure")
	require.Greater(t, counting.Stats().Writes, writes, "an output fragment was stored before the failure")
	faulty.Reset()
	after, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, before.Version, after.Version, "nothing committed")
	require.NoError(t, tbl.Check(ctx, after))
	listing, err := objstore.ListAll(ctx, faulty, dataDir)
	require.NoError(t, err)
	require.Len(t, listing, len(before.Fragments), "the fragments it wrote were deleted")
}

// A fragment is encoded into one buffer about its size, whether a merge's upsert or a compaction
// writes it: not one of the 64 MiB byte target, and not one that doubled past the fragment
// (which holds up to twice its bytes again while the last doubling copies).
func TestFragmentsAreEncodedIntoBuffersOfAboutTheirSize(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := newWriteRecorder(withoutInPlaceWrites{objstoretest.NewMemory()}) // the buffered path
	tbl := newTestTable(t, store, mem)
	rng := rand.New(rand.NewPCG(3, 3))
	for f := range 4 {
		var rows []row
		for i := range 3000 {
			text := randomLetters(rng, 300) // incompressible enough that sizes stay near the rows'
			rows = append(rows, row{id: fmt.Sprintf("k%d-%05d", i%3, f*3000+i), value: int64(i), payload: text, seq: uint64(f + 1)})
		}
		upsertRows(t, tbl, mem, rows)
	}
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	res, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2})
	require.NoError(t, err)
	require.Equal(t, 4, res.FragmentsRemoved)

	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	var sizes []int64
	store.mu.Lock()
	defer store.mu.Unlock()
	require.Len(t, store.caps, 5, "four upserts and one compaction output")
	for path, c := range store.caps {
		data, err := store.Get(ctx, path)
		require.NoError(t, err)
		n := len(data)
		sizes = append(sizes, int64(n))
		require.LessOrEqual(t, c, n*5/4+256<<10, "fragment %s of %d bytes was encoded into a buffer of %d", path, n, c)
	}
	require.Len(t, m.Fragments, 1)
	require.Contains(t, sizes, m.Fragments[0].Bytes, "the compaction's output is among those checked")
	require.Greater(t, m.Fragments[0].Bytes, int64(3<<20), "big enough that a doubling would show")
}

// An upsert whose fragment is one row group has room for that group before it is encoded: its
// buffer is not grown by doublings on the way (each of which copies what was written and can
// leave up to twice the fragment's bytes allocated).
func TestAOneRowGroupFragmentIsEncodedWithoutDoublingItsBuffer(t *testing.T) {
	mem := checkedAlloc(t)
	store := newWriteRecorder(withoutInPlaceWrites{objstoretest.NewMemory()}) // the buffered path
	tbl := newTestTable(t, store, mem)
	rng := rand.New(rand.NewPCG(5, 5))
	rows := numberedRows(800, func(int) string { return randomLetters(rng, 500) })
	upsertRows(t, tbl, mem, rows)

	m, err := tbl.Latest(context.Background())
	require.NoError(t, err)
	require.Len(t, m.Fragments, 1)
	ft, err := tbl.reader.Footer(context.Background(), m.Fragments[0].Ref())
	require.NoError(t, err)
	require.Equal(t, 1, ft.RowGroups(), "the case under test: one row group")
	store.mu.Lock()
	defer store.mu.Unlock()
	require.Len(t, store.caps, 1)
	for path, c := range store.caps {
		n := int(m.Fragments[0].Bytes)
		require.Greater(t, n, 256<<10, "big enough that a doubling would show")
		require.LessOrEqual(t, c, n*9/8+64<<10, "fragment %s of %d bytes was encoded into a buffer of %d", path, n, c)
	}
}

// A compaction's key-index entries stream into their run as its output is written: the run's
// first chunk reaches its object before the output's last bytes do, so a compaction holds a page
// of entries and the run's footer, not an entry per row it rewrites (64 bytes or more each, a
// gigabyte for the largest tier). The run is the one a compaction that held its entries would
// have written: every key found, in the output, through lookups and a full check.
func TestACompactionsIndexEntriesStreamIntoTheirRunAsItsRowsAreWritten(t *testing.T) {
	skipUnderRace(t)
	for _, target := range []int64{0, 7_000} { // one output fragment; several
		t.Run(fmt.Sprintf("target=%d", target), func(t *testing.T) {
			ctx := context.Background()
			mem := checkedAlloc(t)
			var mu sync.Mutex
			var writes []string // the directory of each in-place write, in order
			store := &objstoretest.WriteHooks{Store: objstoretest.NewMemory(), BeforeWriteAt: func(key string, p []byte) func() {
				mu.Lock()
				writes = append(writes, key[:strings.IndexByte(key, '/')+1])
				mu.Unlock()
				return nil
			}}
			tbl := newTestTable(t, store, mem)
			const fragments, perFragment = 4, 6_000
			rng := rand.New(rand.NewPCG(8, 8))
			for f := range fragments {
				var rows []row
				for i := range perFragment { // long keys: the run spans several chunks
					rows = append(rows, row{id: fmt.Sprintf("%0180d", i*fragments+f), value: int64(i), payload: randomLetters(rng, 100), seq: uint64(f + 1)})
				}
				upsertRows(t, tbl, mem, rows)
				if f == 0 {
					_, err := tbl.BuildKeyIndex(ctx)
					require.NoError(t, err)
				}
			}
			// Rewrite a tenth of the rows: the tail runs the compaction takes in hold dead entries.
			var rewrites []row
			for i := 0; i < fragments*perFragment; i += 10 {
				rewrites = append(rewrites, row{id: fmt.Sprintf("%0180d", i), value: -1, payload: "rewritten", seq: 100})
			}
			upsertRows(t, tbl, mem, rewrites)
			before, err := tbl.Latest(ctx)
			require.NoError(t, err)
			want := scanAll(t, tbl, before)

			mu.Lock()
			writes = nil
			mu.Unlock()
			res, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: target, EverySmallFragment: true})
			require.NoError(t, err)
			require.Equal(t, fragments+1, res.FragmentsRemoved)
			firstIndex, lastData := slices.Index(writes, indexDir), -1
			for i, dir := range writes {
				if dir == dataDir {
					lastData = i
				}
			}
			t.Logf("%d in-place writes: the run's first at %d, the output's last at %d", len(writes), firstIndex, lastData)
			require.GreaterOrEqual(t, firstIndex, 0, "the run streams into its object")
			require.Less(t, firstIndex, lastData, "the run is written while the output is")

			require.NoError(t, tbl.Check(ctx, res.Manifest))
			require.Equal(t, want, scanAll(t, tbl, res.Manifest))
			keys := sortedIDs(want)
			found, err := tbl.indexLookup(ctx, res.Manifest, keys)
			require.NoError(t, err)
			require.Len(t, found, len(keys))
			for _, e := range found {
				require.True(t, slices.ContainsFunc(res.Manifest.Fragments, func(f Fragment) bool { return f.ID == e.Fragment }), "entries locate the output")
			}
		})
	}
}

// A compaction's reservation charges the key-index run its entries stream into (its footer, a
// chunk, the tail it takes in), not an entry held per row: on a store that writes in place it
// grows by a few bytes per row compacted.
func TestACompactionsReservationChargesItsIndexRunNotAnEntryPerRow(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	const fragments, perFragment = 4, 50_000
	for f := range fragments {
		rows := make([]row, perFragment)
		for i := range rows {
			rows[i] = row{id: fmt.Sprintf("key-%08d", i*fragments+f), value: int64(i), payload: "p", seq: uint64(f + 1)}
		}
		upsertRows(t, tbl, mem, rows)
		if f == 0 {
			_, err := tbl.BuildKeyIndex(ctx)
			require.NoError(t, err)
		}
	}
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	plan := PlanCompaction(m, CompactionConfig{MinFragments: 2, EverySmallFragment: true})
	require.Len(t, plan.Sources, fragments)
	// The same fragments holding ten times the rows (the same bytes: only the row counts grow).
	larger := *m
	larger.Fragments = slices.Clone(m.Fragments)
	var added int64
	for i := range larger.Fragments {
		added += 9 * larger.Fragments[i].Rows
		larger.Fragments[i].Rows *= 10
	}
	perRow := float64(tbl.CompactionFootprint(&larger, plan)-tbl.CompactionFootprint(m, plan)) / float64(added)
	t.Logf("the reservation grows by %.1f bytes per row", perRow)
	require.Less(t, perRow, 16.0, "a few bytes a row (the run's footer), not an entry held per row (64)")
}

// A maintenance request's overrides replace the config's target and minimum when set and add
// their flags; zero overrides leave the config as it is.
func TestCompactionOverridesApplyToTheConfig(t *testing.T) {
	base := CompactionConfig{MinFragments: 4, TargetRowsPerFragment: 1000, KeepDeletions: true}
	require.Equal(t, base, base.With(compaction.Overrides{}))
	got := base.With(compaction.Overrides{MinFragments: 2, TargetRowsPerFragment: 50, EverySmallFragment: true})
	require.Equal(t, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 50, KeepDeletions: true, EverySmallFragment: true}, got)
	require.True(t, CompactionConfig{}.With(compaction.Overrides{KeepDeletions: true}).KeepDeletions)
}

// decodedBytes is the size of the buffers of rec's columns that hold values (columns of nulls
// only may share their buffers with other records).
func decodedBytes(rec arrow.RecordBatch) int64 {
	var size int64
	for _, col := range rec.Columns() {
		if col.NullN() < col.Len() {
			size += int64(col.Data().SizeInBytes())
		}
	}
	return size
}
