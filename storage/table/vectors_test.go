package table

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/vecindex"
)

var vectorSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "emb", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

type vecRow struct {
	id   string
	emb  []float32 // nil: null
	seq  uint64
	tomb bool
}

func vecBatch(mem memory.Allocator, rows []vecRow) arrow.RecordBatch {
	schema := arrow.NewSchema(append(vectorSchema.Fields(),
		arrow.Field{Name: SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean}), nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.id)
		lb := b.Field(1).(*array.ListBuilder)
		if r.emb == nil || r.tomb {
			lb.AppendNull()
		} else {
			lb.Append(true)
			lb.ValueBuilder().(*array.Float32Builder).AppendValues(r.emb, nil)
		}
		b.Field(2).(*array.Uint64Builder).Append(r.seq)
		b.Field(3).(*array.BooleanBuilder).Append(r.tomb)
	}
	return b.NewRecordBatch()
}

// Fragments indexed and not, rows rewritten (deleted in older fragments), tombstones, nulls and a
// compaction: NearestRows answers what brute force over the live rows answers (every list probed
// for the exact check; the default probes for recall), and cleanup keeps every index a retained
// version names and collects the ones compaction dropped.
func TestVectorIndexesAnswerTheLiveRows(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := objstoretest.NewMemory()
	tbl, err := Create(ctx, store, vectorSchema, "id", Options{Allocator: mem})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(9, 10))
	const dim = 8
	live := map[string]vecRow{}
	seq := uint64(0)
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	write := func(rows []vecRow) {
		rec := vecBatch(mem, rows)
		defer rec.Release()
		_, err := tbl.Upsert(ctx, rec, UpsertOptions{})
		require.NoError(t, err)
		for _, r := range rows {
			if r.tomb {
				delete(live, r.id)
			} else {
				live[r.id] = r
			}
		}
	}
	for round := 0; round < 4; round++ {
		var rows []vecRow
		for i := 0; i < 1500; i++ {
			seq++
			id := fmt.Sprintf("k%05d", rng.IntN(4000))
			r := vecRow{id: id, emb: vec(), seq: seq}
			switch rng.IntN(20) {
			case 0:
				r.emb = nil
			case 1:
				r.tomb = true
			}
			rows = append(rows, r)
		}
		slices.SortFunc(rows, func(a, b vecRow) int { return int(a.seq) - int(b.seq) })
		dedup := map[string]vecRow{}
		for _, r := range rows {
			dedup[r.id] = r
		}
		rows = rows[:0]
		for _, r := range dedup {
			rows = append(rows, r)
		}
		write(rows)
		if round == 1 {
			res, err := tbl.BuildVectorIndexes(ctx, VectorIndexOptions{Column: "emb", Metric: vecindex.L2, MinRows: 100})
			require.NoError(t, err)
			require.Equal(t, 2, res.Fragments, "the two fragments so far")
		}
	}
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, FragmentsWithoutVectorIndex(m, VectorIndexOptions{Column: "emb", Metric: vecindex.L2, MinRows: 100}))
	require.Zero(t, FragmentsWithoutVectorIndex(m, VectorIndexOptions{Column: "emb", Metric: vecindex.L2, MinRows: 1 << 30}))

	check := func(m *Manifest) {
		for trial := 0; trial < 20; trial++ {
			q := vec()
			k := 1 + rng.IntN(30)
			type kd struct {
				key string
				d   float32
			}
			var want []kd
			for _, r := range live {
				if r.emb != nil {
					want = append(want, kd{r.id, vecindex.L2.Distance(q, r.emb)})
				}
			}
			slices.SortFunc(want, func(a, b kd) int {
				if a.d != b.d {
					if a.d < b.d {
						return -1
					}
					return 1
				}
				if a.key < b.key {
					return -1
				}
				return 1
			})
			got, exhausted, err := tbl.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.L2, Query: q, K: k})
			require.NoError(t, err)
			require.False(t, exhausted)
			require.Len(t, got, k)
			hits := 0
			for i, h := range got {
				r, ok := live[h.Ref.Key]
				require.True(t, ok, "a live key")
				require.Equal(t, r.seq, h.Ref.Seq, "the live version")
				require.InDelta(t, vecindex.L2.Distance(q, r.emb), h.Distance, 1e-4)
				if slices.ContainsFunc(want[:k], func(x kd) bool { return x.key == h.Ref.Key }) {
					hits++
				}
				if i > 0 {
					require.LessOrEqual(t, got[i-1].Distance, h.Distance)
				}
			}
			require.GreaterOrEqual(t, float64(hits)/float64(k), 0.5, "recall on random (unclustered) vectors")
			// Skipping keys answers the next ones instead.
			skipped := got[0].Ref.Key
			again, _, err := tbl.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.L2, Query: q, K: k,
				Skip: func(key string, _ uint64) bool { return key == skipped }})
			require.NoError(t, err)
			require.Len(t, again, k)
			require.False(t, slices.ContainsFunc(again, func(h VectorHit) bool { return h.Ref.Key == skipped }))
		}
		all, exhausted, err := tbl.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.L2, Query: vec(), K: 1 << 20})
		require.NoError(t, err)
		require.True(t, exhausted)
		n := 0
		for _, r := range live {
			if r.emb != nil {
				n++
			}
		}
		require.Len(t, all, n, "asking for more than exist answers every live vector once")
	}
	check(m)

	// Compaction rewrites the fragments: their indexes are dropped from the manifest (and later
	// collected), searches stay right, a new build indexes the compacted fragment.
	indexes := vectorIndexPaths(m)
	require.Len(t, indexes, 2)
	_, err = tbl.Compact(ctx, CompactionConfig{MinFragments: 2, EverySmallFragment: true})
	require.NoError(t, err)
	m, err = tbl.Latest(ctx)
	require.NoError(t, err)
	check(m)
	res, err := tbl.BuildVectorIndexes(ctx, VectorIndexOptions{Column: "emb", Metric: vecindex.L2, MinRows: 100})
	require.NoError(t, err)
	require.Positive(t, res.Fragments)
	m, err = tbl.Latest(ctx)
	require.NoError(t, err)
	require.NoError(t, tbl.Check(ctx, m))
	check(m)
	time.Sleep(2 * time.Millisecond)
	_, err = tbl.CleanupVersions(ctx, CleanupOptions{OlderThan: time.Millisecond, Grace: time.Millisecond})
	require.NoError(t, err)
	for _, p := range indexes {
		_, err := store.Get(ctx, p)
		require.Error(t, err, "an index no retained version names is collected")
	}
	for _, p := range vectorIndexPaths(m) {
		_, err := store.Get(ctx, p)
		require.NoError(t, err, "a named index is kept")
	}
	check(m)
}

func vectorIndexPaths(m *Manifest) []string {
	var out []string
	for _, f := range m.Fragments {
		if f.VectorIndex != nil {
			out = append(out, f.VectorIndex.Path)
		}
	}
	return out
}

// An index larger than the process cache still serves searches: the head and the probed lists
// are read and cached each on their own, so a search reads what it probes (not the index), and
// answers what a search with every list cached answers. A damaged list fails the searches that
// probe it (ErrCorrupt), not the others.
func TestAVectorIndexLargerThanTheCacheIsReadAListAtATime(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := objstoretest.NewMemory()
	counting := objstoretest.NewCounting(store)
	tbl, err := Create(ctx, counting, vectorSchema, "id", Options{Allocator: mem, Cache: cache.New(256<<10, nil)})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(11, 12))
	const dim = 32
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	var rows []vecRow
	for i := range 6000 {
		rows = append(rows, vecRow{id: fmt.Sprintf("k%05d", i), emb: vec(), seq: uint64(i + 1)})
	}
	rec := vecBatch(mem, rows)
	_, err = tbl.Upsert(ctx, rec, UpsertOptions{})
	rec.Release()
	require.NoError(t, err)
	_, err = tbl.BuildVectorIndexes(ctx, VectorIndexOptions{Column: "emb", Metric: vecindex.Cosine, MinRows: 100})
	require.NoError(t, err)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Len(t, m.Fragments, 1)
	ref := m.Fragments[0].VectorIndex
	require.Greater(t, ref.Bytes, int64(512<<10), "the index is larger than the cache")

	wide, err := Open(ctx, store, Options{Allocator: mem, Cache: cache.New(64<<20, nil)})
	require.NoError(t, err)
	for range 10 {
		q := vec()
		before := counting.Stats()
		got, _, err := tbl.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.Cosine, Query: q, K: 10})
		require.NoError(t, err)
		read := counting.Stats().Sub(before).ReadBytes
		require.Less(t, read, ref.Bytes/2, "a search reads the lists it probes, not the index")
		want, _, err := wide.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.Cosine, Query: q, K: 10})
		require.NoError(t, err)
		require.Equal(t, want, got)
	}

	// Damage one byte in the middle of the index: some searches fail with ErrCorrupt, none answer
	// from the damaged bytes.
	data, err := store.Get(ctx, ref.Path)
	require.NoError(t, err)
	data[len(data)/2] ^= 0x40
	require.NoError(t, store.Delete(ctx, ref.Path))
	require.NoError(t, store.Put(ctx, ref.Path, data))
	fresh, err := Open(ctx, store, Options{Allocator: mem, Cache: cache.New(64<<20, nil)})
	require.NoError(t, err)
	failed := 0
	for range 40 {
		_, _, err := fresh.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.Cosine, Query: vec(), K: 10})
		if err != nil {
			require.ErrorIs(t, err, vecindex.ErrCorrupt)
			failed++
		}
	}
	require.Positive(t, failed)
}

// A fragment without any vector gets an empty index (it counts as indexed, so no build comes back
// for it, and a search skips it); one with vectors of two lengths gets an index of the more
// common one, and a query of the other length is answered exactly from the fragment.
func TestFragmentsWithoutVectorsOrWithSeveralLengthsAreIndexed(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	tbl, err := Create(ctx, objstoretest.NewMemory(), vectorSchema, "id", Options{Allocator: mem})
	require.NoError(t, err)
	var empty, mixed []vecRow
	for i := range 300 {
		empty = append(empty, vecRow{id: fmt.Sprintf("a%04d", i), seq: uint64(i + 1)})
		v := []float32{float32(i), 1, 2, 3}
		if i%3 == 0 {
			v = []float32{float32(i), 1}
		}
		mixed = append(mixed, vecRow{id: fmt.Sprintf("b%04d", i), emb: v, seq: uint64(1000 + i)})
	}
	for _, rows := range [][]vecRow{empty, mixed} {
		rec := vecBatch(mem, rows)
		_, err := tbl.Upsert(ctx, rec, UpsertOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	opts := VectorIndexOptions{Column: "emb", Metric: vecindex.L2, MinRows: 100}
	res, err := tbl.BuildVectorIndexes(ctx, opts)
	require.NoError(t, err)
	require.Equal(t, 2, res.Fragments)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Zero(t, FragmentsWithoutVectorIndex(m, opts), "both fragments count as indexed")
	dims := map[int64]int{}
	for _, f := range m.Fragments {
		dims[f.VectorIndex.Rows] = f.VectorIndex.Dim
	}
	require.Equal(t, map[int64]int{0: 1, 200: 4}, dims, "an empty index, and one of the 200 four-float vectors")

	hits, exhausted, err := tbl.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.L2, Query: []float32{3, 1}, K: 2})
	require.NoError(t, err)
	require.Len(t, hits, 2, "two-float vectors, answered exactly")
	require.Equal(t, []string{"b0003", "b0000"}, []string{hits[0].Ref.Key, hits[1].Ref.Key})
	require.False(t, exhausted)
	hits, _, err = tbl.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.L2, Query: []float32{7, 1, 2, 3}, K: 1})
	require.NoError(t, err)
	require.Equal(t, "b0007", hits[0].Ref.Key, "four-float vectors, through the index")
	hits, exhausted, err = tbl.NearestRows(ctx, m, VectorQuery{Column: "emb", Metric: vecindex.L2, Query: []float32{1, 2, 3}, K: 5})
	require.NoError(t, err)
	require.Empty(t, hits)
	require.True(t, exhausted)
}
