package lsm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storage/vecindex"
)

var vectorUserSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "emb", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

func vectorRows(mem memory.Allocator, ids []string, embs [][]float32) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, vectorUserSchema)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		lb := b.Field(1).(*array.ListBuilder)
		if embs[i] == nil {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		lb.ValueBuilder().(*array.Float32Builder).AppendValues(embs[i], nil)
	}
	return b.NewRecordBatch()
}

// Appends (new keys, rewrites, null vectors), deletes, seals from two processes, merges, index
// builds and compactions interleaved: every Nearest answer holds only keys' newest versions, with
// their exact distances, nearest first; its recall against an exact model stays high; and asking
// for more rows than exist answers every row with a vector, exhausted.
func TestNearestMatchesAModel(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	open := func(instance string) *Store {
		s, err := Create(ctx, e.objects, vectorUserSchema, "id", e.opts(instance))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	w1, w2 := open("w1"), open("w2")
	rng := rand.New(rand.NewPCG(21, 22))
	const dim = 6
	model := map[string][]float32{} // key -> newest vector (nil: null vector); absent: deleted
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	write := func(s *Store, n int) {
		ids := make([]string, 0, n)
		embs := make([][]float32, 0, n)
		seen := map[string]bool{}
		for len(ids) < n {
			id := fmt.Sprintf("k%04d", rng.IntN(1500))
			if seen[id] {
				continue
			}
			seen[id] = true
			v := vec()
			if rng.IntN(15) == 0 {
				v = nil
			}
			ids, embs = append(ids, id), append(embs, v)
		}
		rec := vectorRows(e.mem, ids, embs)
		defer rec.Release()
		_, err := s.Append(ctx, rec)
		require.NoError(t, err)
		for i, id := range ids {
			model[id] = embs[i]
		}
	}
	check := func() {
		for trial := 0; trial < 5; trial++ {
			q := vec()
			k := 1 + rng.IntN(25)
			res, err := w1.Nearest(ctx, NearestQuery{Column: "emb", Metric: vecindex.L2, Query: q, K: k, Columns: []string{"id", "emb"}})
			require.NoError(t, err)
			type kd struct {
				key string
				d   float32
			}
			var want []kd
			for key, v := range model {
				if v != nil {
					want = append(want, kd{key, vecindex.L2.Distance(q, v)})
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
			wantK := want[:min(k, len(want))]
			ids := res.Rows.Column(0).(*array.String)
			require.EqualValues(t, len(wantK), res.Rows.NumRows())
			hits := 0
			for i := 0; i < ids.Len(); i++ {
				v, ok := model[ids.Value(i)]
				require.True(t, ok && v != nil, "a live key with a vector: %s", ids.Value(i))
				require.InDelta(t, vecindex.L2.Distance(q, v), res.Distances[i], 1e-4, "the newest version's vector")
				require.Equal(t, v, res.Vectors[i], "the row's vector")
				if i > 0 {
					require.LessOrEqual(t, res.Distances[i-1], res.Distances[i])
				}
				if slices.ContainsFunc(wantK, func(x kd) bool { return x.key == ids.Value(i) }) {
					hits++
				}
			}
			require.GreaterOrEqual(t, float64(hits), 0.6*float64(len(wantK)), "recall")
			res.Rows.Release()
		}
		res, err := w1.Nearest(ctx, NearestQuery{Column: "emb", Metric: vecindex.L2, Query: vec(), K: 100000, Columns: []string{"id"}})
		require.NoError(t, err)
		n := 0
		for _, v := range model {
			if v != nil {
				n++
			}
		}
		require.EqualValues(t, n, res.Rows.NumRows(), "every row with a vector, once")
		require.True(t, res.Exhausted)
		res.Rows.Release()
	}
	steps := 40
	if raceEnabled || testStorage != "" {
		steps = 20 // the race detector, or an object store's round trips, make each step dearer
	}
	for step := 0; step < steps; step++ {
		switch op := rng.IntN(10); {
		case op < 4:
			write(w1, 20+rng.IntN(200)) // may stay in w1's memtable
		case op < 6:
			write(w2, 20+rng.IntN(200))
			require.NoError(t, w2.Flush(ctx)) // w1 sees w2's rows once sealed
		case op == 6:
			var del []string
			for key := range model {
				if rng.IntN(20) == 0 {
					del = append(del, key)
				}
			}
			if len(del) > 0 {
				_, err := w1.Delete(ctx, del)
				require.NoError(t, err)
				for _, k := range del {
					delete(model, k)
				}
			}
		case op == 7:
			require.NoError(t, w1.Flush(ctx))
			_, err := w1.Merge(ctx, MergeOptions{}, 4)
			require.NoError(t, err)
		case op == 8:
			_, err := w1.BuildVectorIndexes(ctx, VectorIndexOptions{Column: "emb", Metric: vecindex.L2, MinRows: 50})
			require.NoError(t, err)
		default:
			_, err := w1.Compact(ctx, CompactOptions{Compaction: table.CompactionConfig{MinFragments: 2, EverySmallFragment: true}})
			require.NoError(t, err)
		}
		if step%4 == 3 {
			check()
		}
	}
	m, err := w1.TableManifest(ctx)
	require.NoError(t, err)
	indexed := 0
	for _, f := range m.Fragments {
		if f.VectorIndex != nil {
			indexed++
		}
	}
	t.Logf("fragments %d, indexed %d", len(m.Fragments), indexed)
	check()
}
