package lsm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storage/textindex"
)

var textUserSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "body", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func textRows(mem memory.Allocator, ids []string, bodies []*string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, textUserSchema)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		if bodies[i] == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*bodies[i])
		}
	}
	return b.NewRecordBatch()
}

// Appends (new keys, rewrites, null text), deletes, seals from two processes, merges, text index
// builds and compactions interleaved: every SearchText answer equals an exact BM25 ranking of the
// model's newest versions — the same statistics and the same scores whether a row is in a
// memtable, a pending generation, an indexed fragment or an unindexed one.
func TestSearchTextMatchesAModel(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	open := func(instance string) *Store {
		s, err := Create(ctx, e.objects, textUserSchema, "id", e.opts(instance))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	w1, w2 := open("w1"), open("w2")
	rng := rand.New(rand.NewPCG(31, 32))
	words := []string{"alpha", "beta", "gamma", "delta", "Payments", "runbook", "deploy", "incident", "rare"}
	model := map[string]*string{} // key -> newest text (nil: null); absent: deleted
	text := func() *string {
		if rng.IntN(12) == 0 {
			return nil
		}
		var sb strings.Builder
		for range rng.IntN(9) {
			w := words[rng.IntN(len(words)-1)]
			if rng.IntN(40) == 0 {
				w = "rare"
			}
			sb.WriteString(w + " ")
		}
		s := sb.String()
		return &s
	}
	write := func(s *Store, n int) {
		ids := make([]string, 0, n)
		bodies := make([]*string, 0, n)
		seen := map[string]bool{}
		for len(ids) < n {
			id := fmt.Sprintf("k%04d", rng.IntN(1200))
			if seen[id] {
				continue
			}
			seen[id] = true
			ids, bodies = append(ids, id), append(bodies, text())
		}
		rec := textRows(e.mem, ids, bodies)
		defer rec.Release()
		_, err := s.Append(ctx, rec)
		require.NoError(t, err)
		for i, id := range ids {
			model[id] = bodies[i]
		}
	}
	check := func() {
		for trial := 0; trial < 4; trial++ {
			qtext := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
			q, err := textindex.ParseQuery(qtext)
			require.NoError(t, err)
			k := 1 + rng.IntN(30)
			stats := q.NewStats()
			type ks struct {
				key string
				doc textindex.Doc
				s   float32
			}
			var want []ks
			for key, body := range model {
				if body == nil {
					continue
				}
				d, ok := q.Match(*body)
				if !ok {
					stats.AddDoc(d.Len, nil)
					continue
				}
				stats.AddDoc(d.Len, &d)
				want = append(want, ks{key: key, doc: d})
			}
			sc := textindex.NewScorer(stats)
			for i := range want {
				want[i].s = sc.Score(want[i].doc)
			}
			slices.SortFunc(want, func(a, b ks) int {
				if a.s != b.s {
					if a.s > b.s {
						return -1
					}
					return 1
				}
				return strings.Compare(a.key, b.key)
			})
			res, err := w1.SearchText(ctx, TextQuery{Column: "body", Query: q, K: k, Columns: []string{"id", "body"}})
			require.NoError(t, err)
			wantK := want[:min(k, len(want))]
			require.EqualValues(t, len(wantK), res.Rows.NumRows(), "query %q", qtext)
			ids := res.Rows.Column(0).(*array.String)
			bodies := res.Rows.Column(1).(*array.String)
			for i := range wantK {
				require.Equal(t, wantK[i].key, ids.Value(i), "query %q rank %d", qtext, i)
				require.Equal(t, *model[wantK[i].key], bodies.Value(i))
				require.InDelta(t, wantK[i].s, res.Scores[i], 1e-5)
			}
			require.Equal(t, len(want) <= k, res.Exhausted)
			res.Rows.Release()
		}
		// GetSearched answers each key's newest version, or nothing for a deleted or unknown key.
		keys := []string{"nope"}
		for range 12 {
			keys = append(keys, fmt.Sprintf("k%04d", rng.IntN(1200)))
		}
		rec, found, err := w1.GetSearched(ctx, keys, []string{"body", "id"})
		require.NoError(t, err)
		defer rec.Release()
		for i, key := range keys {
			body, ok := model[key]
			if !ok {
				require.Equal(t, -1, found[i], key)
				continue
			}
			require.GreaterOrEqual(t, found[i], 0, key)
			require.Equal(t, key, rec.Column(1).(*array.String).Value(found[i]))
			col := rec.Column(0).(*array.String)
			if body == nil {
				require.True(t, col.IsNull(found[i]), key)
			} else {
				require.Equal(t, *body, col.Value(found[i]), key)
			}
		}
	}
	steps := 40
	if raceEnabled {
		steps = 20
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
			_, err := w1.BuildTextIndexes(ctx, TextIndexOptions{Column: "body", MinRows: 50})
			require.NoError(t, err)
		default:
			_, err := w1.Compact(ctx, CompactOptions{Compaction: table.CompactionConfig{MinFragments: 2, EverySmallFragment: true}})
			require.NoError(t, err)
		}
		if step%4 == 3 {
			check()
		}
	}
	_, err := w1.BuildTextIndexes(ctx, TextIndexOptions{Column: "body", MinRows: 50})
	require.NoError(t, err)
	m, err := w1.TableManifest(ctx)
	require.NoError(t, err)
	indexed := 0
	for _, f := range m.Fragments {
		if f.TextIndex != nil {
			indexed++
		}
	}
	require.Positive(t, indexed, "some fragments were searched through their index")
	require.NoError(t, w1.tbl.Check(ctx, m))
	check()
}
