package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/workflows"
)

// A context store's merge builds the vector index (in the store's metric) and the full-text index
// of the fragment it wrote; a rollout store's builds none. (The SDK's test environment batches heartbeats after the
// first, so the build's phase in the details is left to the browser check's view of a merge.)
func TestMergeOfAContextStoreBuildsItsSearchIndexes(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	f.seedContext(t, "mem", kinds.ContextConfig{EmbeddingDim: 8, DistanceMetric: "cosine"}, 1500)

	env := f.env()
	val, err := env.ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: catalog.KindContext, Name: "mem"},
		Request: workflows.Request{Op: workflows.OpMergeWAL}})
	require.NoError(t, err)
	var res workflows.ActivityResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, 1, res.VectorIndexesBuilt)
	require.Equal(t, 1, res.TextIndexesBuilt)

	s, release, err := f.mgr.Acquire(ctx, catalog.KindContext, "mem")
	require.NoError(t, err)
	defer release()
	m, err := s.TableManifest(ctx)
	require.NoError(t, err)
	require.Len(t, m.Fragments, 1)
	require.NotNil(t, m.Fragments[0].VectorIndex)
	require.Equal(t, "cosine", m.Fragments[0].VectorIndex.Metric)
	require.EqualValues(t, 1500, m.Fragments[0].VectorIndex.Rows)
	require.NotNil(t, m.Fragments[0].TextIndex)
	require.Equal(t, contexts.TextColumn, m.Fragments[0].TextIndex.Column)
	require.EqualValues(t, 1500, m.Fragments[0].TextIndex.Docs)
	left, err := s.FragmentsWithoutSearchIndexes(ctx, lsm.VectorIndexOptions{Column: "embedding", Metric: contexts.VectorMetric("cosine")},
		lsm.TextIndexOptions{Column: contexts.TextColumn})
	require.NoError(t, err)
	require.Zero(t, left)
	f.seed(t, "plain", 1, 1200)
	val, err = env.ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: catalog.KindRollout, Name: "plain"},
		Request: workflows.Request{Op: workflows.OpMergeWAL}})
	require.NoError(t, err)
	var plain workflows.ActivityResult
	require.NoError(t, val.Get(&plain))
	require.Zero(t, plain.VectorIndexesBuilt)
	require.Zero(t, plain.TextIndexesBuilt)
}

// A context store's fragment without its search indexes counts as not index-covered in the stats
// (so the sweep queues index work for it), and the index activity builds them.
func TestStatsCountMissingSearchIndexesAndTheIndexActivityBuildsThem(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	f.seedContext(t, "gap", kinds.ContextConfig{EmbeddingDim: 4}, 1200)

	env := f.env()
	f.acts.VectorIndexMinRows = 1 << 30 // the merge indexes nothing
	_, err := env.ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: catalog.KindContext, Name: "gap"},
		Request: workflows.Request{Op: workflows.OpMergeWAL}})
	require.NoError(t, err)
	f.acts.VectorIndexMinRows = 0
	_, err = env.ExecuteActivity(f.acts.StatsRefresh, workflows.ActivityInput{Store: workflows.StoreRef{Kind: catalog.KindContext, Name: "gap"},
		Request: workflows.Request{Op: workflows.OpStatsRefresh}})
	require.NoError(t, err)
	st, err := f.cat.GetStoreStats(ctx, catalog.KindContext, "gap")
	require.NoError(t, err)
	require.Equal(t, 1, st.Fragments)
	require.Zero(t, st.IndexCoveredFragments, "the fragment lacks its search indexes")

	val, err := env.ExecuteActivity(f.acts.BuildKeyIndex, workflows.ActivityInput{Store: workflows.StoreRef{Kind: catalog.KindContext, Name: "gap"},
		Request: workflows.Request{Op: workflows.OpBuildKeyIndex}})
	require.NoError(t, err)
	var res workflows.ActivityResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, 1, res.VectorIndexesBuilt)
	require.Equal(t, 1, res.TextIndexesBuilt)
	st, err = f.cat.GetStoreStats(ctx, catalog.KindContext, "gap")
	require.NoError(t, err)
	require.Equal(t, 1, st.IndexCoveredFragments)
}

// seedContext registers context store name with cfg and seals n records of random embeddings of
// cfg's dimension into it.
func (f *fixture) seedContext(t *testing.T, name string, cfg kinds.ContextConfig, n int) {
	ctx := context.Background()
	options, err := json.Marshal(cfg)
	require.NoError(t, err)
	_, _, err = f.mgr.Create(ctx, catalog.KindContext, name, nil, options)
	require.NoError(t, err)
	s, release, err := f.mgr.Acquire(ctx, catalog.KindContext, name)
	require.NoError(t, err)
	defer release()
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]contexts.Record, 0, n)
	for i := range n {
		emb := make([]float32, cfg.EmbeddingDim)
		for j := range emb {
			emb[j] = float32(rng.NormFloat64())
		}
		text := fmt.Sprint("memory ", i)
		recs = append(recs, contexts.Record{ID: fmt.Sprintf("0190%08d", i), RunID: "r", Role: "user", ContentType: "text/plain",
			LifecycleStatus: contexts.LifecycleActive, TextPayload: &text, Embedding: emb})
	}
	rec, err := contexts.ToArrow(memory.DefaultAllocator, recs)
	require.NoError(t, err)
	_, err = s.Append(ctx, rec)
	rec.Release()
	require.NoError(t, err)
	require.NoError(t, s.Flush(ctx))
}

// A search index build that fails (its object write refused) fails the merge activity, which
// leaves everything it committed in place; the activity's retry builds the missing index, and
// the stats count the fragment covered only then.
func TestAFailedSearchIndexBuildFailsTheActivityAndItsRetryBuildsIt(t *testing.T) {
	var faults *objstoretest.Faulty
	f := newFixtureWith(t, 0, func(s objstore.Store) objstore.Store { faults = objstoretest.NewFaulty(s); return faults })
	ctx := context.Background()
	f.seedContext(t, "flaky", kinds.ContextConfig{EmbeddingDim: 4}, 1200)
	faults.AddRule(objstoretest.Rule{Times: 1, Err: objstoretest.ErrInjected, Match: func(op objstoretest.Op, key string) bool {
		return strings.HasSuffix(key, ".stxi") && (op == objstoretest.OpPut || op == objstoretest.OpPutIfAbsent)
	}})
	ref := workflows.StoreRef{Kind: catalog.KindContext, Name: "flaky"}
	env := f.env()
	_, err := env.ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: ref, Request: workflows.Request{Op: workflows.OpMergeWAL}})
	require.Error(t, err, "the failed build fails the activity")
	require.Contains(t, err.Error(), "text index")

	s, release, err := f.mgr.Acquire(ctx, catalog.KindContext, "flaky")
	require.NoError(t, err)
	defer release()
	m, err := s.TableManifest(ctx)
	require.NoError(t, err)
	require.Len(t, m.Fragments, 1, "the merge itself committed")
	require.NotNil(t, m.Fragments[0].VectorIndex, "so did the vector index")
	require.Nil(t, m.Fragments[0].TextIndex)

	val, err := env.ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: ref, Request: workflows.Request{Op: workflows.OpMergeWAL}})
	require.NoError(t, err, "the retry")
	var res workflows.ActivityResult
	require.NoError(t, val.Get(&res))
	require.Zero(t, res.GenerationsMerged)
	require.Zero(t, res.VectorIndexesBuilt)
	require.Equal(t, 1, res.TextIndexesBuilt)
	st, err := f.cat.GetStoreStats(ctx, catalog.KindContext, "flaky")
	require.NoError(t, err)
	require.Equal(t, 1, st.IndexCoveredFragments)
}
