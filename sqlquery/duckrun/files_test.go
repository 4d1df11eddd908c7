//go:build duckdb_arrow

package duckrun

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testrows"
	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// A store on a local disk is read as its fragment files plus the WAL; a randomized history
// (appends and deletes through two shards, seals, merges of either shard, compactions) must
// answer every query as the Arrow snapshot does and as a model of the rows does, for each source.
func TestFragmentFilesAnswerAsTheSnapshotScan(t *testing.T) {
	mem := testrows.CheckedAlloc(t)
	objects, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	ctx := context.Background()
	clock := hlc.New(nil)
	open := func(instance string) *lsm.Store {
		s, err := lsm.Create(ctx, objects, testSchema, "id", lsm.Options{Instance: instance, Allocator: mem, Clock: clock})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(ctx) })
		return s
	}
	writers := []*lsm.Store{open("w0"), open("w1")}
	require.True(t, writers[0].OnLocalDisk())
	files := newRunner(t, Limits{})
	arrowRunner := newRunner(t, Limits{NoFragmentFiles: true})
	model := map[string]int64{} // id -> step
	rng := rand.New(rand.NewPCG(3, 4))
	queries := []string{
		"SELECT id, step FROM t ORDER BY id",
		"SELECT step, count(*) AS n, sum(reward) AS r FROM t GROUP BY step ORDER BY step",
		"SELECT count(*) FROM t",
		"SELECT a.id FROM t a JOIN records b USING (id) WHERE a.step <> b.step",
	}
	for step := range 60 {
		w := writers[rng.IntN(2)]
		switch op := rng.IntN(10); {
		case op < 5:
			first, n := rng.IntN(200), 1+rng.IntN(30)
			appendRows(t, w, mem, first, n, int64(step))
			for i := first; i < first+n; i++ {
				model[fmt.Sprintf("id-%06d", i)] = int64(step)
			}
		case op < 6:
			id := fmt.Sprintf("id-%06d", rng.IntN(230))
			_, err := w.Delete(ctx, []string{id})
			require.NoError(t, err)
			delete(model, id)
		case op < 8:
			require.NoError(t, w.Flush(ctx))
		case op < 9:
			_, err := writers[0].MergeShard(ctx, writers[rng.IntN(2)].Shard(), lsm.MergeOptions{MaxGenerations: 1 + rng.IntN(3)})
			require.NoError(t, err)
		default:
			_, err := writers[0].Compact(ctx, lsm.CompactOptions{Compaction: table.CompactionConfig{MinFragments: 2}})
			require.NoError(t, err)
		}
		if step%10 != 9 {
			continue
		}
		for _, w := range writers {
			require.NoError(t, w.Flush(ctx)) // the other writer's rows are visible to the reader
		}
		reader := writers[0]
		for _, source := range []lsm.Source{lsm.SourceAll, lsm.SourceBase, lsm.SourceWAL} {
			for _, stmt := range queries {
				want := answer(t, arrowRunner, reader, stmt, source)
				got := answer(t, files, reader, stmt, source)
				require.Equal(t, want, got, "step %d, %v: %s", step, source, stmt)
			}
		}
		got := answer(t, files, reader, "SELECT id, step FROM t", lsm.SourceAll)
		require.Len(t, got, len(model), "step %d", step)
		for _, row := range got {
			require.Equal(t, model[row[0].(string)], row[1], "step %d: %v", step, row)
		}
	}
}

// answer runs a statement and returns its rows (strings copied out of DuckDB's memory).
func answer(t *testing.T, r *Runner, s *lsm.Store, stmt string, source lsm.Source) [][]any {
	t.Helper()
	var rows [][]any
	_, err := r.Run(context.Background(), s, sqlquery.Request{Statement: stmt, Source: source}, collect(&rows))
	require.NoError(t, err, stmt)
	return rows
}
