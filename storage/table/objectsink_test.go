package table

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// writeRecorder records the fragment writes that reach a store: whole objects put (their bytes
// and the capacity of the buffer they were put from), and in-place writes with their sizes.
type writeRecorder struct {
	*objstoretest.WriteHooks
	mu     sync.Mutex
	puts   map[string]int   // fragment path -> bytes of the object put
	caps   map[string]int   // fragment path -> cap of the buffer it was put from
	writes map[string][]int // fragment path -> sizes of its in-place writes, in order
}

func newWriteRecorder(inner objstore.Store) *writeRecorder {
	r := &writeRecorder{puts: map[string]int{}, caps: map[string]int{}, writes: map[string][]int{}}
	r.WriteHooks = &objstoretest.WriteHooks{Store: inner,
		BeforePut: func(key string, data []byte) func() {
			if strings.HasPrefix(key, dataDir) {
				r.mu.Lock()
				r.puts[key], r.caps[key] = len(data), cap(data)
				r.mu.Unlock()
			}
			return nil
		},
		BeforeWriteAt: func(key string, p []byte) func() {
			r.mu.Lock()
			r.writes[key] = append(r.writes[key], len(p))
			r.mu.Unlock()
			return nil
		}}
	return r
}

// withoutInPlaceWrites hides a store's in-place writes (an S3 bucket's view of the same objects).
type withoutInPlaceWrites struct{ objstore.Store }

// fragmentsOfRandomText writes n fragments of rows of 500 random letters, keys interleaved, and
// returns the ids written.
func fragmentsOfRandomText(t *testing.T, tbl *Table, n, perFragment int) []string {
	rng := rand.New(rand.NewPCG(3, 3))
	var ids []string
	for f := range n {
		var rows []row
		for i := range perFragment {
			id := fmt.Sprintf("k%06d", i*n+f)
			ids = append(ids, id)
			rows = append(rows, row{id: id, value: int64(i), payload: randomLetters(rng, 500), seq: uint64(f + 1)})
		}
		upsertRows(t, tbl, tbl.mem, rows)
	}
	return ids
}

// On a store that writes in place, a compaction's output reaches its object a chunk at a time:
// what the compaction holds of it is a chunk, not its whole encoding.
func TestStreamedFragmentsReachTheirObjectAChunkAtATime(t *testing.T) {
	skipUnderRace(t)
	ctx := context.Background()
	mem := checkedAlloc(t)
	rec := newWriteRecorder(objstoretest.NewMemory())
	tbl := newTestTable(t, rec, mem)
	ids := fragmentsOfRandomText(t, tbl, 4, 4_000)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	res, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2})
	require.NoError(t, err)
	require.Equal(t, 1, res.FragmentsAdded)
	out := res.Manifest.Fragments[0]
	require.Greater(t, out.Bytes, int64(2*objstore.SinkChunkBytes), "the output spans several chunks")

	require.Zero(t, rec.puts[out.Path], "the object is created empty")
	writes := rec.writes[out.Path]
	require.Greater(t, len(writes), 2)
	var total int
	for _, n := range writes[:len(writes)-1] {
		require.Equal(t, objstore.SinkChunkBytes, n, "every write but the last is one chunk")
		total += n
	}
	total += writes[len(writes)-1]
	require.EqualValues(t, out.Bytes, total, "the manifest records the bytes written")
	info, err := rec.Stat(ctx, out.Path)
	require.NoError(t, err)
	require.Equal(t, out.Bytes, info.Size)

	require.NoError(t, tbl.Check(ctx, res.Manifest))
	require.ElementsMatch(t, ids, sortedIDs(scanAll(t, tbl, res.Manifest)))
}

// On a store that cannot write in place, a fragment is encoded in memory and stored whole; the
// table reads the same either way.
func TestFragmentsOnStoresWithoutInPlaceWritesAreStoredWhole(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	rec := newWriteRecorder(withoutInPlaceWrites{objstoretest.NewMemory()})
	require.False(t, objstore.WritesInPlace(rec))
	tbl := newTestTable(t, rec, mem)
	ids := fragmentsOfRandomText(t, tbl, 4, 1_000)
	res, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2})
	require.NoError(t, err)
	require.Equal(t, 1, res.FragmentsAdded)
	out := res.Manifest.Fragments[0]
	require.EqualValues(t, out.Bytes, rec.puts[out.Path], "one put of the whole fragment")
	require.Empty(t, rec.writes)
	require.NoError(t, tbl.Check(ctx, res.Manifest))
	require.ElementsMatch(t, ids, sortedIDs(scanAll(t, tbl, res.Manifest)))
}

// A streamed fragment whose write or sync fails is deleted: the failed merge or compaction
// leaves no object behind and the table as it was.
func TestAFailedStreamedFragmentLeavesNoObject(t *testing.T) {
	skipUnderRace(t)
	for _, op := range []objstoretest.Op{objstoretest.OpWriteAt, objstoretest.OpSync} {
		t.Run(string(op), func(t *testing.T) {
			ctx := context.Background()
			mem := checkedAlloc(t)
			inner := objstoretest.NewMemory()
			faulty := objstoretest.NewFaulty(inner)
			tbl := newTestTable(t, faulty, mem)
			ids := fragmentsOfRandomText(t, tbl, 3, 3_000)
			before, err := tbl.Latest(ctx)
			require.NoError(t, err)
			files := objectsUnder(t, inner, dataDir)

			faulty.AddRule(objstoretest.Rule{Match: func(o objstoretest.Op, key string) bool {
				return o == op && strings.HasPrefix(key, dataDir)
			}, Err: objstoretest.ErrInjected})
			_, err = tbl.Compact(ctx, CompactionConfig{MinFragments: 2})
			require.ErrorIs(t, err, objstoretest.ErrInjected)
			require.Equal(t, files, objectsUnder(t, inner, dataDir), "the compaction's fragment is gone")

			rec := batch(mem, numberedRows(10, func(int) string { return "x" }))
			_, err = tbl.Upsert(ctx, rec, UpsertOptions{})
			rec.Release()
			require.ErrorIs(t, err, objstoretest.ErrInjected)
			require.Equal(t, files, objectsUnder(t, inner, dataDir), "the upsert's fragment is gone")

			after, err := tbl.Latest(ctx)
			require.NoError(t, err)
			require.Equal(t, before.Version, after.Version)
			require.ElementsMatch(t, ids, sortedIDs(scanAll(t, tbl, after)))
		})
	}
}

func objectsUnder(t *testing.T, s objstore.Store, prefix string) []string {
	listing, err := objstore.ListAll(context.Background(), s, prefix)
	require.NoError(t, err)
	keys := make([]string, len(listing))
	for i, o := range listing {
		keys[i] = o.Key
	}
	return keys
}

// A compaction's reservation counts its output's encoding only where it is held: whole on a store
// that cannot write in place, a chunk on one that can.
func TestCompactionFootprintCountsTheOutputWhereItIsHeld(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	inner := objstoretest.NewMemory()
	tbl := newTestTable(t, inner, mem)
	fragmentsOfRandomText(t, tbl, 4, 1_000)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	plan := PlanCompaction(m, CompactionConfig{MinFragments: 2})
	require.Len(t, plan.Sources, 4)
	var sources int64
	for _, f := range m.Fragments {
		sources += f.Bytes
	}
	buffered, err := Open(ctx, withoutInPlaceWrites{inner}, Options{Allocator: mem})
	require.NoError(t, err)
	streamed, whole := tbl.CompactionFootprint(m, plan), buffered.CompactionFootprint(m, plan)
	require.Equal(t, sources*17/16-objstore.SinkChunkBytes, whole-streamed)
}
