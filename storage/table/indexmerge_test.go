package table

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// readRunWhole is every entry of a stored run, decoded at once (the reference merge's input).
func readRunWhole(t *testing.T, tbl *Table, seg IndexRun) []indexEntry {
	t.Helper()
	data, err := tbl.store.Get(context.Background(), seg.Path)
	require.NoError(t, err)
	return decodeRun(t, data)
}

// decodeRun decodes an encoded run's entries and checks its footer against them.
func decodeRun(t *testing.T, data []byte) []indexEntry {
	t.Helper()
	flen := int(data[len(data)-runTailSize]) | int(data[len(data)-runTailSize+1])<<8 | int(data[len(data)-runTailSize+2])<<16 | int(data[len(data)-runTailSize+3])<<24
	f, err := decodeFooter(data[len(data)-runTailSize-flen : len(data)-runTailSize])
	require.NoError(t, err)
	var out []indexEntry
	for _, p := range f.pages.refs(0, f.pages.len()) {
		page, err := decodePage(data[p.offset : p.offset+p.length])
		require.NoError(t, err)
		require.Equal(t, p.firstKey, page.key(0))
		for i := range page.len() {
			out = append(out, page.at(i))
		}
	}
	require.EqualValues(t, len(out), f.entries)
	for _, e := range out {
		require.True(t, f.bloom.TestString(e.Key))
	}
	if len(out) > 0 {
		require.Equal(t, out[len(out)-1].Key, f.lastKey)
	}
	return out
}

// referenceMerge is the merge's definition: every run's entries together, newest run first among
// equal keys, and per key the first live one.
func referenceMerge(t *testing.T, tbl *Table, m *Manifest, runs [][]indexEntry) []indexEntry {
	t.Helper()
	var all []indexEntry
	for i := len(runs) - 1; i >= 0; i-- {
		all = append(all, runs[i]...)
	}
	slices.SortStableFunc(all, func(a, b indexEntry) int { return cmp.Compare(a.Key, b.Key) })
	lv := newLiveness(tbl, m)
	var out []indexEntry
	for _, e := range all {
		if len(out) > 0 && out[len(out)-1].Key == e.Key {
			continue
		}
		live, err := lv.live(context.Background(), e)
		require.NoError(t, err)
		if live {
			out = append(out, e)
		}
	}
	return out
}

// The streamed merge of index runs keeps exactly what the definition keeps — the newest live
// entry of every key, stale entries (rows rewritten, deleted, compacted away) dropped — on tables
// driven through random upserts, deletes, index rebuilds and compactions.
func TestIndexRunMergeKeepsTheNewestLiveEntryOfEveryKey(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl, err := Create(ctx, objstoretest.NewMemory(), testSchema, "id", Options{Allocator: mem})
	require.NoError(t, err)
	var seq uint64
	merges, dropped := 0, 0
	for step := range 300 {
		switch op := rng.IntN(10); {
		case op < 7:
			var rows []row
			for range 1 + rng.IntN(40) {
				seq++
				rows = append(rows, row{id: fmt.Sprintf("k%03d", rng.IntN(400)), value: int64(step), payload: "p", seq: seq, tombstone: rng.IntN(10) == 0})
			}
			rec := batch(mem, rows)
			_, err = tbl.Upsert(ctx, rec, UpsertOptions{})
			rec.Release()
		case op < 8:
			_, err = tbl.BuildKeyIndex(ctx)
		default:
			_, err = tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: int64(20 + rng.IntN(100)), MaxSourceFragments: 8})
		}
		require.NoError(t, err, "step %d", step)
		m, err := tbl.Latest(ctx)
		require.NoError(t, err)
		if m.KeyIndex == nil || len(m.KeyIndex.Runs) < 2 {
			continue
		}
		runs := m.KeyIndex.Runs
		var inputs [][]indexEntry
		for _, seg := range runs {
			inputs = append(inputs, readRunWhole(t, tbl, seg))
		}
		merged, err := tbl.mergeRuns(ctx, m, runs[:len(runs)-1], inputs[len(inputs)-1])
		require.NoError(t, err)
		got := readRunWhole(t, tbl, merged)
		require.EqualValues(t, len(got), merged.Entries)
		require.Equal(t, referenceMerge(t, tbl, m, inputs), got, "step %d", step)
		merges++
		for _, in := range inputs {
			dropped += len(in)
		}
		dropped -= len(got)
	}
	require.Positive(t, merges)
	require.Positive(t, dropped, "some merges met stale entries")
}

// rangeRecorder records the ranged reads of key-index runs.
type rangeRecorder struct {
	objstore.Store
	mu      sync.Mutex
	longest int64
	reads   int
}

func (r *rangeRecorder) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if strings.HasSuffix(key, ".kix") {
		r.mu.Lock()
		r.longest, r.reads = max(r.longest, length), r.reads+1
		r.mu.Unlock()
	}
	return r.Store.GetRange(ctx, key, offset, length)
}

// storedRunOfLiveEntries stores a run of n entries (keys of 34 bytes, in order) in tbl and returns
// it, its entries and tbl's latest manifest with one fragment holding every entry's row (all
// live), to merge against.
func storedRunOfLiveEntries(t *testing.T, tbl *Table, n int) (IndexRun, *Manifest, []indexEntry) {
	t.Helper()
	ctx := context.Background()
	entries := make([]indexEntry, n)
	for i := range entries {
		entries[i] = indexEntry{Key: fmt.Sprintf("key-%09d-%s", i, strings.Repeat("x", 20)), Fragment: 1, Row: int64(i), Seq: uint64(i)}
	}
	seg, err := tbl.writeRun(ctx, entries)
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	m.addFragment(Fragment{ID: 1, Path: "data/1.parquet", Rows: int64(n)})
	return seg, m, entries
}

// On a store that writes in place a merged run of more than a chunk streams into its object a
// chunk at a time (a merge that takes in a table's largest run holds a chunk of it, not all of
// it), and its reservation counts a chunk; elsewhere, or when it is small, the run is stored
// whole, and reserved whole.
func TestMergedIndexRunsStreamIntoTheirObjectOnStoresThatWriteInPlace(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	newer := []indexEntry{{Key: "key-000000005-" + strings.Repeat("x", 20), Fragment: 1, Row: 5, Seq: 1 << 40}}
	for _, inPlace := range []bool{true, false} {
		rec := newWriteRecorder(objstoretest.NewMemory())
		var store objstore.Store = rec
		if !inPlace {
			store = withoutInPlaceWrites{rec}
		}
		tbl := newTestTable(t, store, mem)
		seg, m, entries := storedRunOfLiveEntries(t, tbl, 200_000)
		require.Greater(t, seg.Bytes, int64(4*objstore.SinkChunkBytes), "the run spans several chunks")
		m.KeyIndex = &KeyIndex{Runs: []IndexRun{seg}}
		footprint := tbl.IndexRunFootprint(m, int64(len(entries)))

		merged, err := tbl.mergeRuns(ctx, m, []IndexRun{seg}, newer)
		require.NoError(t, err)
		got := readRunWhole(t, tbl, merged)
		require.Len(t, got, len(entries))
		require.Equal(t, uint64(1<<40), got[5].Seq, "the newer run's entry wins")
		writes := rec.writes[merged.Path]
		if !inPlace {
			require.Empty(t, writes, "stored whole")
			require.Greater(t, footprint, seg.Bytes, "the reservation counts the run built in memory")
			continue
		}
		var total int64
		for _, n := range writes {
			require.LessOrEqual(t, n, objstore.SinkChunkBytes)
			total += int64(n)
		}
		require.Equal(t, merged.Bytes, total, "every byte written in place")
		require.Greater(t, len(writes), 4, "a chunk at a time")
		require.Less(t, footprint, seg.Bytes/2, "the reservation counts a chunk and a window, not the run")

		// A run of less than a chunk is stored with one put: streaming it would only add a sync.
		small, err := tbl.writeRun(ctx, entries[:100])
		require.NoError(t, err)
		mergedSmall, err := tbl.mergeRuns(ctx, m, []IndexRun{small}, newer)
		require.NoError(t, err)
		require.Empty(t, rec.writes[mergedSmall.Path])
		require.Len(t, readRunWhole(t, tbl, mergedSmall), 100)
	}
}

// A merge reads its inputs a bounded window at a time — however large they are — and caches none
// of their pages.
func TestIndexRunMergeReadsItsInputsAWindowAtATime(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	rec := &rangeRecorder{Store: objstoretest.NewMemory()}
	tbl, err := Create(ctx, rec, testSchema, "id", Options{Allocator: mem})
	require.NoError(t, err)
	seg, m, entries := storedRunOfLiveEntries(t, tbl, 200_000)
	require.Greater(t, seg.Bytes, int64(4*mergeWindowBytes), "the run spans several windows")
	newer := []indexEntry{{Key: "key-000000005-" + strings.Repeat("x", 20), Fragment: 1, Row: 5, Seq: 1 << 40}, {Key: "zz", Fragment: 1, Row: 7, Seq: 9}}
	merged, err := tbl.mergeRuns(ctx, m, []IndexRun{seg}, newer)
	require.NoError(t, err)
	require.EqualValues(t, len(entries)+1, merged.Entries)
	got := readRunWhole(t, tbl, merged)
	require.Equal(t, uint64(1<<40), got[5].Seq, "the newer run's entry wins")
	require.Equal(t, "zz", got[len(got)-1].Key)
	require.LessOrEqual(t, rec.longest, int64(mergeWindowBytes))
	require.GreaterOrEqual(t, rec.reads, int(seg.Bytes/mergeWindowBytes))
	f, err := tbl.footer(ctx, seg)
	require.NoError(t, err)
	for _, p := range f.pages.refs(0, f.pages.len()) {
		_, cached := tbl.cachedPage(seg, p)
		require.False(t, cached, "a merge's input pages are never cached")
	}
}

// getRangeCounter counts the GetRange calls on key-index objects; everything else (reads into
// buffers, in-place writes) passes through to the store it wraps.
type getRangeCounter struct {
	*objstoretest.ReadSizes
	gets atomic.Int64
}

func (c *getRangeCounter) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if strings.HasPrefix(key, indexDir) {
		c.gets.Add(1)
	}
	return c.ReadSizes.GetRange(ctx, key, offset, length)
}

// On a store that reads into the caller's memory (a local disk) a merge reads each input's
// windows into one reused buffer, not a fresh megabyte per window: the same entries come out.
func TestIndexRunMergeOnALocalStoreReusesOneWindowPerInput(t *testing.T) {
	ctx := context.Background()
	local, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := &getRangeCounter{ReadSizes: &objstoretest.ReadSizes{Store: local, Prefix: indexDir}}
	tbl, err := Create(ctx, store, testSchema, "id", Options{Allocator: checkedAlloc(t)})
	require.NoError(t, err)
	seg, m, entries := storedRunOfLiveEntries(t, tbl, 200_000)
	require.Greater(t, seg.Bytes, int64(4*mergeWindowBytes), "the run spans several windows")
	_, err = tbl.footer(ctx, seg)
	require.NoError(t, err)

	store.gets.Store(0)
	store.Reset()
	newer := []indexEntry{{Key: "key-000000005-" + strings.Repeat("x", 20), Fragment: 1, Row: 5, Seq: 1 << 40}}
	merged, err := tbl.mergeRuns(ctx, m, []IndexRun{seg}, newer)
	require.NoError(t, err)
	require.Zero(t, store.gets.Load(), "every window is read into the reader's buffer")
	require.LessOrEqual(t, store.Largest(), int64(mergeWindowBytes))
	want := slices.Clone(entries)
	want[5] = newer[0]
	require.Equal(t, want, readRunWhole(t, tbl, merged))
}

// A run whose footer names bytes the run does not have (offsets past its end, lengths that
// overflow, negative ones) fails the merge as corrupt; nothing panics.
func TestIndexRunMergeRefusesADamagedRun(t *testing.T) {
	ctx := context.Background()
	tbl, err := Create(ctx, objstoretest.NewMemory(), testSchema, "id", Options{Allocator: checkedAlloc(t)})
	require.NoError(t, err)
	var entries []indexEntry
	for i := range 1000 {
		entries = append(entries, indexEntry{Key: fmt.Sprintf("k%05d", i), Fragment: 1, Row: int64(i), Seq: 1})
	}
	seg, err := tbl.writeRun(ctx, entries)
	require.NoError(t, err)
	f, err := tbl.footer(ctx, seg)
	require.NoError(t, err)
	for _, bad := range []pageRef{{offset: 1 << 62, length: 1 << 62}, {offset: 0, length: -5}, {offset: seg.Bytes - 2, length: 100}, {offset: -1, length: 10}} {
		damaged := *f
		damaged.pages = pageDirectory{}
		for i := range f.pages.len() {
			p := f.pages.at(i)
			if i == 3 {
				p.offset, p.length = bad.offset, bad.length
			}
			damaged.pages.add(p)
		}
		damaged.pages.done()
		r := &runReader{t: tbl, seg: seg, footer: &damaged}
		var err error
		for range 2000 {
			var ok bool
			if _, ok, err = r.peek(ctx); err != nil || !ok {
				break
			}
			r.advance()
		}
		require.Error(t, err, "page %+v", bad)
	}
}

// cacheLookups is how often the object cache in reg was asked for an object of kind, hit or
// missed.
func cacheLookups(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range families {
		if mf.GetName() != "strata_cache_hits_total" && mf.GetName() != "strata_cache_misses_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// A run merge reads a fragment's deletion vector once, however many of the entries it checks
// point into that fragment: the cost of liveness follows the fragments, not the entries.
func TestIndexRunMergeReadsEachDeletionVectorOnce(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	reg := prometheus.NewRegistry()
	tbl, err := Create(ctx, objstoretest.NewMemory(), testSchema, "id", Options{Allocator: mem, Cache: cache.New(64<<20, reg)})
	require.NoError(t, err)
	var seq uint64
	upsert := func(first, n int) {
		t.Helper()
		var rows []row
		for k := first; k < first+n; k++ {
			seq++
			rows = append(rows, row{id: fmt.Sprintf("k%04d", k), value: int64(seq), payload: "p", seq: seq})
		}
		rec := batch(mem, rows)
		defer rec.Release()
		_, err := tbl.Upsert(ctx, rec, UpsertOptions{})
		require.NoError(t, err)
	}
	// Three fragments of 200 rows, indexed; then rewrites of every other key range so the older
	// fragments carry deletion vectors and the newer runs shadow some of their entries.
	for f := range 3 {
		upsert(f*200, 200)
	}
	_, err = tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	upsert(100, 200)
	upsert(450, 100)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.NotNil(t, m.KeyIndex)
	runs := m.KeyIndex.Runs
	require.GreaterOrEqual(t, len(runs), 2)

	withDeletions, entriesInThem := 0, 0
	inputs := make([][]indexEntry, len(runs))
	for i, seg := range runs {
		inputs[i] = readRunWhole(t, tbl, seg)
	}
	for _, f := range m.Fragments {
		if f.DeletedRows > 0 {
			withDeletions++
		}
	}
	for _, in := range inputs {
		for _, e := range in {
			if f, ok := m.Fragment(e.Fragment); ok && f.DeletedRows > 0 {
				entriesInThem++
			}
		}
	}
	require.Positive(t, withDeletions)
	require.Greater(t, entriesInThem, 10*withDeletions, "the merge checks many entries per fragment with deletions")

	before := cacheLookups(t, reg, "deletion")
	merged, err := tbl.mergeRuns(ctx, m, runs[:len(runs)-1], inputs[len(inputs)-1])
	require.NoError(t, err)
	lookups := cacheLookups(t, reg, "deletion") - before
	require.LessOrEqual(t, lookups, float64(withDeletions), "one lookup per fragment with deletions")
	got := readRunWhole(t, tbl, merged)
	require.EqualValues(t, len(got), merged.Entries)
	require.Equal(t, referenceMerge(t, tbl, m, inputs), got)
}

// A run merge refuses entries that come before a key it already holds (its owner's bug) rather
// than store a run whose lookups would miss keys; a second entry of the same key is dropped, the
// first kept, as a merge of runs keeps one entry per key.
func TestARunMergeRefusesEntriesOutOfKeyOrder(t *testing.T) {
	ctx := context.Background()
	tbl := newTestTable(t, objstoretest.NewMemory(), checkedAlloc(t))
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	rm, err := tbl.newRunMerge(ctx, m, nil, 2, 64, false)
	require.NoError(t, err)
	require.NoError(t, rm.add(ctx, indexEntry{Key: "b", Fragment: 1}))
	require.ErrorIs(t, rm.add(ctx, indexEntry{Key: "a", Fragment: 1}), errEntriesOutOfOrder)
	rm.abort()

	rm, err = tbl.newRunMerge(ctx, m, nil, 2, 64, false)
	require.NoError(t, err)
	require.NoError(t, rm.add(ctx, indexEntry{Key: "b", Fragment: 1, Row: 1}))
	require.NoError(t, rm.add(ctx, indexEntry{Key: "b", Fragment: 1, Row: 2}))
	require.NoError(t, rm.add(ctx, indexEntry{Key: "c", Fragment: 1, Row: 3}))
	run, err := rm.finish(ctx)
	require.NoError(t, err)
	require.Equal(t, []indexEntry{{Key: "b", Fragment: 1, Row: 1}, {Key: "c", Fragment: 1, Row: 3}}, readRunWhole(t, tbl, run))
}
