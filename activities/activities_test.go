package activities_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/workflows"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

type fixture struct {
	cat     *catalog.Catalog
	mgr     *storecache.Manager
	budget  *budget.Budget
	metrics *table.Metrics
	acts    *activities.Activities
}

func newFixture(t *testing.T, budgetBytes int64) *fixture { return newFixtureWith(t, budgetBytes, nil) }

// newFixtureWith is newFixture with the data directory's object store wrapped by wrap.
func newFixtureWith(t *testing.T, budgetBytes int64, wrap func(objstore.Store) objstore.Store) *fixture {
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	f := &fixture{cat: cat, budget: budget.New(budgetBytes, nil), metrics: table.NewMetrics(nil)}
	f.mgr, err = storecache.New(cat, storecache.Config{DataURL: t.TempDir(), WrapObjects: wrap, Store: lsm.Options{Instance: "writer",
		Budget: f.budget, Table: table.Options{Metrics: f.metrics}}}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.mgr.Close(context.Background()) })
	f.acts = &activities.Activities{Stores: f.mgr, HeartbeatInterval: 10 * time.Millisecond}
	return f
}

// seed registers a rollout store and seals n generations of rows into it.
func (f *fixture) seed(t *testing.T, name string, gens, rowsPerGen int) {
	_, _, err := f.mgr.Create(context.Background(), catalog.KindRollout, name, nil, nil)
	require.NoError(t, err)
	s, release, err := f.mgr.Acquire(context.Background(), catalog.KindRollout, name)
	require.NoError(t, err)
	defer release()
	for g := range gens {
		ids := make([]string, rowsPerGen)
		for r := range ids {
			ids[r] = fmt.Sprintf("%s-%d-%d", name, g, r)
		}
		rec := kinds.MinimalRolloutBatch(memory.DefaultAllocator, ids...)
		_, err := s.Append(context.Background(), rec)
		rec.Release()
		require.NoError(t, err)
		require.NoError(t, s.Flush(context.Background()))
	}
}

func (f *fixture) env() *testsuite.TestActivityEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	return env
}

func TestMergeWALBuildsTheIndexFirstHeartbeatsAndWritesStats(t *testing.T) {
	f := newFixture(t, 0)
	f.seed(t, "m", 3, 40)
	env := f.env()
	var mu sync.Mutex
	var phases []activities.Phase
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var d activities.HeartbeatDetails
		if details.Get(&d) == nil {
			mu.Lock()
			phases = append(phases, d.Phase)
			mu.Unlock()
		}
	})
	before := testutil.ToFloat64(f.metrics.UnindexedKeyScans)
	val, err := env.ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "m"}, Request: workflows.Request{Op: workflows.OpMergeWAL}})
	require.NoError(t, err)
	var res workflows.ActivityResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, 3, res.GenerationsMerged)
	require.EqualValues(t, 120, res.RowsMerged)
	require.Equal(t, before, testutil.ToFloat64(f.metrics.UnindexedKeyScans), "index-before-merge: no key-column scans")
	mu.Lock()
	require.Contains(t, phases, activities.PhaseIndexing)
	mu.Unlock()

	st, err := f.cat.GetStoreStats(context.Background(), catalog.KindRollout, "m")
	require.NoError(t, err)
	require.EqualValues(t, 120, st.BaseRows)
	require.Equal(t, st.Fragments, st.IndexCoveredFragments)
	require.Zero(t, st.PendingGenerations)
	require.EqualValues(t, 1, st.MergesTotal)

	// The attempt is in the store's maintenance history, with its result.
	runs, err := f.cat.ListRuns(context.Background(), catalog.KindRollout, "m", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, "merge_wal", runs[0].Op)
	require.Equal(t, catalog.RunOK, runs[0].Outcome)
	require.Contains(t, runs[0].Detail, `"rows_merged":120`)
}

// A merge waiting for budget keeps heartbeating (with waiting_for_budget set; the SDK batches
// heartbeats after the first, so the test observes the waiter through the budget), is never
// taken for stalled however long it waits, and releases its reservation when done.
func TestMergeWALWaitsForBudgetAndReleasesIt(t *testing.T) {
	f := newFixture(t, 1<<20)
	// Far shorter than the wait below (5x), long enough for the merge's own phases on a loaded
	// machine (the race detector, other test packages).
	f.acts.StallTimeout = time.Second
	f.seed(t, "w", 1, 10)
	f.runOnceBudgetFrees(t, "the merge", func() error {
		_, err := f.env().ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "w"}})
		return err
	})
}

// runOnceBudgetFrees holds the whole budget, starts run, checks it waits for the budget (five
// stall timeouts, not taken for stalled), frees the budget, and requires run to succeed and
// give back what it reserved.
func (f *fixture) runOnceBudgetFrees(t *testing.T, what string, run func() error) {
	t.Helper()
	hold, err := f.budget.Reserve(context.Background(), f.budget.Capacity())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- run() }()
	require.Eventually(t, func() bool { return f.budget.Waiters() == 1 }, 10*time.Second, 5*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("%s ran (or gave up) without budget: %v", what, err)
	case <-time.After(5 * f.acts.StallTimeout):
	}
	hold.Release()
	require.NoError(t, <-done)
	require.Zero(t, f.budget.Reserved(), "%s released its reservation", what)
}

// A compaction holds its footprint from the merge memory budget: waiting for it, it is not taken
// for stalled however long it waits (its heartbeats say it waits; the SDK's test environment
// hands only an activity's first heartbeat to a listener, so the test watches the budget's
// waiters instead), and it releases the budget when done.
func TestCompactWaitsForMergeBudgetAndReleasesIt(t *testing.T) {
	f := newFixture(t, 1<<20)
	f.seed(t, "cw", 3, 10)
	ref := workflows.StoreRef{Kind: "rollout", Name: "cw"}
	f.acts.Merge = lsm.MergeOptions{MaxGenerations: 1}
	for range 3 { // three fragments to compact
		_, err := f.env().ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: ref, Request: workflows.Request{MaxPasses: 1}})
		require.NoError(t, err)
	}
	f.acts.Compaction = table.CompactionConfig{MinFragments: 2}
	// As for the merge: a compaction's own storage calls take more than 250 ms at times on a
	// loaded machine (seen with every test package running).
	f.acts.StallTimeout = time.Second
	var res workflows.ActivityResult
	f.runOnceBudgetFrees(t, "the compaction", func() error {
		val, err := f.env().ExecuteActivity(f.acts.Compact, workflows.ActivityInput{Store: ref})
		if err == nil {
			err = val.Get(&res)
		}
		return err
	})
	require.Positive(t, res.FragmentsRemoved)
}

func TestAMissingStoreIsNonRetryable(t *testing.T) {
	f := newFixture(t, 0)
	_, err := f.env().ExecuteActivity(f.acts.Compact, workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "nope"}})
	require.ErrorContains(t, err, workflows.ErrStoreGone)
}

func TestCompactCleanupAndStatsActivities(t *testing.T) {
	f := newFixture(t, 0)
	f.seed(t, "c", 4, 5)
	ref := workflows.StoreRef{Kind: "rollout", Name: "c"}
	f.acts.Merge = lsm.MergeOptions{MaxGenerations: 1}
	for range 4 { // one merge per generation: four fragments
		_, err := f.env().ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: ref, Request: workflows.Request{MaxPasses: 1}})
		require.NoError(t, err)
	}
	f.acts.Compaction = table.CompactionConfig{MinFragments: 2}
	_, err := f.env().ExecuteActivity(f.acts.StatsRefresh, workflows.ActivityInput{Store: ref})
	require.NoError(t, err)
	before, err := f.cat.GetStoreStats(context.Background(), catalog.KindRollout, "c")
	require.NoError(t, err)
	require.Equal(t, 4, before.CompactableFragments, "the planner would rewrite the four small fragments")
	val, err := f.env().ExecuteActivity(f.acts.Compact, workflows.ActivityInput{Store: ref})
	require.NoError(t, err)
	var res workflows.ActivityResult
	require.NoError(t, val.Get(&res))
	require.Positive(t, res.FragmentsRemoved)
	_, err = f.env().ExecuteActivity(f.acts.CleanupVersions, workflows.ActivityInput{Store: ref})
	require.NoError(t, err)
	cleaned, err := f.cat.GetStoreStats(context.Background(), catalog.KindRollout, "c")
	require.NoError(t, err)
	require.Positive(t, cleaned.CleanedVersion, "the cleanup is recorded for the sweep")
	require.Positive(t, cleaned.GarbageBytes(), "the compacted-away fragments are garbage, younger than the TTL: kept")
	f.acts.Cleanup = table.CleanupOptions{OlderThan: time.Nanosecond, Grace: time.Nanosecond}
	_, err = f.env().ExecuteActivity(f.acts.CleanupVersions, workflows.ActivityInput{Store: ref})
	require.NoError(t, err)
	cleaned, err = f.cat.GetStoreStats(context.Background(), catalog.KindRollout, "c")
	require.NoError(t, err)
	require.Zero(t, cleaned.GarbageBytes(), "a cleanup past the TTL deletes them, and the catalog says so")
	_, err = f.env().ExecuteActivity(f.acts.StatsRefresh, workflows.ActivityInput{Store: ref})
	require.NoError(t, err)
	st, err := f.cat.GetStoreStats(context.Background(), catalog.KindRollout, "c")
	require.NoError(t, err)
	require.EqualValues(t, 20, st.BaseRows)
	require.Equal(t, 1, st.Fragments)
	require.Equal(t, 1, st.IndexCoveredFragments)
	require.Zero(t, st.CompactableFragments, "after the compaction a plan would do nothing: no more compactions are queued")
}

// A store that stopped receiving rows with its last merge's fragment uncompressed (under the
// compaction target, alone in its tier) is reported compactable once its table has been idle for
// CompressIdleAfter (and the fragment is large enough to be worth it), and the Compact activity
// rewrites that fragment compressed; until then, and after, nothing is queued.
func TestAnIdleStoresUncompressedFragmentIsCompactedOnItsOwn(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	f.seed(t, "quiet", 1, 50)
	ref := workflows.StoreRef{Kind: "rollout", Name: "quiet"}
	_, err := f.env().ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: ref})
	require.NoError(t, err)
	compactable := func() int {
		t.Helper()
		_, err := f.env().ExecuteActivity(f.acts.StatsRefresh, workflows.ActivityInput{Store: ref})
		require.NoError(t, err)
		st, err := f.cat.GetStoreStats(ctx, catalog.KindRollout, "quiet")
		require.NoError(t, err)
		require.Equal(t, 1, st.Fragments)
		return st.CompactableFragments
	}
	f.acts.Compaction = table.CompactionConfig{} // the worker's defaults: idle after 30 minutes
	require.Zero(t, compactable(), "just merged: not idle")

	f.acts.Compaction = table.CompactionConfig{CompressIdleAfter: time.Nanosecond}
	require.Zero(t, compactable(), "idle, but its one uncompressed fragment is under the default 1 MiB floor")
	f.acts.Compaction.CompressIdleMinBytes = 1
	require.Equal(t, 1, compactable(), "idle: its one uncompressed fragment is a candidate")
	val, err := f.env().ExecuteActivity(f.acts.Compact, workflows.ActivityInput{Store: ref})
	require.NoError(t, err)
	var res workflows.ActivityResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, 1, res.FragmentsRemoved)
	require.Equal(t, 1, res.FragmentsAdded)
	require.Zero(t, compactable(), "compressed now: nothing more to do")

	s, release, err := f.mgr.Acquire(ctx, catalog.KindRollout, "quiet")
	require.NoError(t, err)
	defer release()
	m, err := s.TableManifest(ctx)
	require.NoError(t, err)
	require.False(t, m.Fragments[0].Uncompressed)
	require.EqualValues(t, 50, m.Rows())
}

func TestSweepQueuesHottestStoresFirstWithinItsCap(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	for _, n := range []string{"hot", "warm", "cold", "fragmented"} {
		_, _, err := f.mgr.Create(ctx, catalog.KindRollout, n, nil, nil)
		require.NoError(t, err)
	}
	old := time.Now().Add(-time.Hour)
	require.NoError(t, f.cat.UpsertShardStats(ctx, []catalog.ShardStats{
		{Kind: catalog.KindRollout, Name: "hot", Shard: "s", PendingGenerations: 50},
		{Kind: catalog.KindRollout, Name: "warm", Shard: "s", PendingGenerations: 9},
		{Kind: catalog.KindRollout, Name: "cold", Shard: "s", PendingGenerations: 1, OldestPendingAt: &old},
	}))
	require.NoError(t, f.cat.UpsertStoreStats(ctx, []catalog.StoreStats{
		{Kind: catalog.KindRollout, Name: "fragmented", Fragments: 30, IndexCoveredFragments: 30, CompactableFragments: 12},
		// Many fragments, but a compaction plan would rewrite none: not queued.
		{Kind: catalog.KindRollout, Name: "hot", Fragments: 40, IndexCoveredFragments: 40},
		// Far past its last version cleanup.
		{Kind: catalog.KindRollout, Name: "cold", TableVersion: 100},
	}))
	var mu sync.Mutex // requests are sent concurrently
	var got []string
	f.acts.Request = func(_ context.Context, s workflows.StoreRef, r workflows.Request) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s.Name+":"+string(r.Op))
		return nil
	}
	val, err := f.env().ExecuteActivity(f.acts.SweepCandidates, workflows.SweepInput{})
	require.NoError(t, err)
	var res workflows.SweepResult
	require.NoError(t, val.Get(&res))
	require.ElementsMatch(t, []string{"hot:merge_wal", "warm:merge_wal", "cold:merge_wal", "fragmented:compact", "cold:cleanup_versions"}, got)
	require.Equal(t, 3, res.Queued[workflows.OpMergeWAL])

	// The next sweep pages on: the stores it queued are not queued again before their
	// maintenance ran (or RequeueAfter).
	got = nil
	_, err = f.env().ExecuteActivity(f.acts.SweepCandidates, workflows.SweepInput{})
	require.NoError(t, err)
	require.Empty(t, got)

	// Stats not observed within StatsStaleAfter are refreshed too, after everything else: a cap
	// that leaves room for one of them keeps every other request.
	got = nil
	time.Sleep(2 * time.Millisecond)
	_, err = f.env().ExecuteActivity(f.acts.SweepCandidates, workflows.SweepInput{StatsStaleAfter: time.Millisecond, RequeueAfter: time.Millisecond})
	require.NoError(t, err)
	require.Len(t, got, 9)
	got = nil
	time.Sleep(2 * time.Millisecond)
	_, err = f.env().ExecuteActivity(f.acts.SweepCandidates, workflows.SweepInput{StatsStaleAfter: time.Millisecond, MaxRequests: 6, RequeueAfter: time.Millisecond})
	require.NoError(t, err)
	require.Len(t, got, 6)
	require.Subset(t, got, []string{"hot:merge_wal", "warm:merge_wal", "cold:merge_wal", "fragmented:compact", "cold:cleanup_versions"})
	// Stats refreshes have a cap of their own, so idle stores never crowd out the rest.
	got = nil
	time.Sleep(2 * time.Millisecond)
	_, err = f.env().ExecuteActivity(f.acts.SweepCandidates, workflows.SweepInput{StatsStaleAfter: time.Millisecond, MaxStatsRefreshes: 2, RequeueAfter: time.Millisecond})
	require.NoError(t, err)
	require.Len(t, got, 7, "five requests and two of the four stats refreshes")

	// The cap keeps the hottest, in priority order: merges by pending generations, then stale ones.
	for limit, want := range map[int][]string{1: {"hot:merge_wal"}, 3: {"hot:merge_wal", "warm:merge_wal", "cold:merge_wal"}} {
		got = nil
		time.Sleep(2 * time.Millisecond)
		_, err = f.env().ExecuteActivity(f.acts.SweepCandidates, workflows.SweepInput{MaxRequests: limit, RequeueAfter: time.Millisecond})
		require.NoError(t, err)
		require.ElementsMatch(t, want, got, "cap %d", limit)
	}
}

func TestRegistryCleanupPurgesLongDeletedStoresOnly(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	f.seed(t, "gone", 2, 5)
	f.seed(t, "kept", 1, 5)
	st, err := f.cat.GetStore(ctx, catalog.KindRollout, "gone")
	require.NoError(t, err)
	_, err = f.cat.SoftDeleteStore(ctx, catalog.KindRollout, "gone")
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)

	// Within the grace period nothing is purged.
	val, err := f.env().ExecuteActivity(f.acts.RegistryCleanup, workflows.RegistryCleanupInput{Grace: time.Hour})
	require.NoError(t, err)
	var res workflows.RegistryCleanupResult
	require.NoError(t, val.Get(&res))
	require.Zero(t, res.StoresPurged)

	val, err = f.env().ExecuteActivity(f.acts.RegistryCleanup, workflows.RegistryCleanupInput{Grace: time.Millisecond, QuietShards: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, val.Get(&res))
	require.Equal(t, 1, res.StoresPurged)
	require.Positive(t, res.ObjectsDeleted)
	left, err := f.cat.ListDeletedStores(ctx, time.Now().Add(time.Hour), 10)
	require.NoError(t, err)
	require.Empty(t, left, "the row is purged after the data")
	_, err = os.Stat(strings.TrimPrefix(st.URI, "file://"))
	require.True(t, os.IsNotExist(err) || dirIsEmpty(t, strings.TrimPrefix(st.URI, "file://")), "the data is gone")

	s, release, err := f.mgr.Acquire(ctx, catalog.KindRollout, "kept")
	require.NoError(t, err)
	defer release()
	rec, err := s.Scan(ctx, lsm.ScanOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 5, rec.Rows.NumRows(), "other stores are untouched")
	rec.Rows.Release()
}

func dirIsEmpty(t *testing.T, dir string) bool {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n == 0
}

// A merge on a store whose 100k-row base table has no key index builds the index first: the
// merge itself never falls back to scanning key columns.
func TestMergeOnAnUnindexed100kRowStoreBuildsTheIndexFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("100k rows")
	}
	f := newFixture(t, 0)
	ctx := context.Background()
	_, _, err := f.mgr.Create(ctx, catalog.KindRollout, "big", nil, nil)
	require.NoError(t, err)
	s, release, err := f.mgr.Acquire(ctx, catalog.KindRollout, "big")
	require.NoError(t, err)
	defer release()
	appendN := func(prefix string, n int) {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-%06d", prefix, i)
		}
		rec := kinds.MinimalRolloutBatch(memory.DefaultAllocator, ids...)
		defer rec.Release()
		_, err := s.Append(ctx, rec)
		require.NoError(t, err)
		require.NoError(t, s.Flush(ctx))
	}
	appendN("base", 100_000)
	_, err = s.MergeShard(ctx, s.Shard(), lsm.MergeOptions{}) // into an empty table: no index
	require.NoError(t, err)
	m, err := s.TableManifest(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 100_000, m.Rows())
	require.Nil(t, m.KeyIndex, "the base table starts unindexed")

	appendN("new", 1000)
	before := testutil.ToFloat64(f.metrics.UnindexedKeyScans)
	_, err = f.env().ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "big"}})
	require.NoError(t, err)
	require.Equal(t, before, testutil.ToFloat64(f.metrics.UnindexedKeyScans), "the no-index fallback counter did not move")
	m, err = s.TableManifest(ctx)
	require.NoError(t, err)
	require.True(t, m.IndexCoversAll())
	require.EqualValues(t, 101_000, m.Rows())
}

func TestRegistryCleanupReportsAndAdoptsOrphans(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	f.seed(t, "lost", 1, 3)
	f.seed(t, "fine", 1, 3)
	st, err := f.cat.GetStore(ctx, catalog.KindRollout, "lost")
	require.NoError(t, err)
	// The registry row disappears (a restore from an older backup, a bad migration...).
	_, err = f.cat.SoftDeleteStore(ctx, catalog.KindRollout, "lost")
	require.NoError(t, err)
	require.NoError(t, f.cat.PurgeStore(ctx, st.ID))

	val, err := f.env().ExecuteActivity(f.acts.RegistryCleanup, workflows.RegistryCleanupInput{})
	require.NoError(t, err)
	var res workflows.RegistryCleanupResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, 1, res.Orphans)
	require.Equal(t, []string{st.URI}, res.OrphanURIs)
	require.Zero(t, res.OrphansAdopted, "reported only")

	val, err = f.env().ExecuteActivity(f.acts.RegistryCleanup, workflows.RegistryCleanupInput{AdoptOrphans: true})
	require.NoError(t, err)
	require.NoError(t, val.Get(&res))
	require.Equal(t, 1, res.OrphansAdopted)
	back, err := f.cat.GetStore(ctx, catalog.KindRollout, "lost")
	require.NoError(t, err)
	require.Equal(t, st.URI, back.URI)
	s, release, err := f.mgr.Acquire(ctx, catalog.KindRollout, "lost")
	require.NoError(t, err)
	defer release()
	page, err := s.Scan(ctx, lsm.ScanOptions{})
	require.NoError(t, err)
	defer page.Rows.Release()
	require.EqualValues(t, 3, page.Rows.NumRows(), "the adopted store has its data")
}

// Every store activity attempt is counted by activity type and outcome; the names pass promlint.
func TestActivityOutcomeMetrics(t *testing.T) {
	f := newFixture(t, 1<<30)
	reg := prometheus.NewRegistry()
	f.acts.Metrics = activities.NewMetrics(reg)
	f.seed(t, "ok", 2, 3)
	_, err := f.env().ExecuteActivity(f.acts.MergeWAL, workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "ok"}})
	require.NoError(t, err)
	_, err = f.env().ExecuteActivity(f.acts.Compact, workflows.ActivityInput{Store: workflows.StoreRef{Kind: "rollout", Name: "missing"}})
	require.ErrorContains(t, err, workflows.ErrStoreGone)

	runs, err := testutil.GatherAndCount(reg, "strata_maintenance_activities_total")
	require.NoError(t, err)
	require.Equal(t, 2, runs, "one series per (activity, outcome) seen")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP strata_maintenance_activities_total Maintenance activity attempts by activity type and outcome (success, error, canceled, store_gone).
# TYPE strata_maintenance_activities_total counter
strata_maintenance_activities_total{activity="Compact",outcome="store_gone"} 1
strata_maintenance_activities_total{activity="MergeWAL",outcome="success"} 1
`), "strata_maintenance_activities_total"))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// The sweep's requests are in flight together, not one round trip after another: a requester
// that only returns once two calls overlap would time out if they were sent in a row.
func TestSweepSendsRequestsConcurrently(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	var shards []catalog.ShardStats
	for _, n := range []string{"a", "b", "c", "d"} {
		_, _, err := f.mgr.Create(ctx, catalog.KindRollout, n, nil, nil)
		require.NoError(t, err)
		shards = append(shards, catalog.ShardStats{Kind: catalog.KindRollout, Name: n, Shard: "s", PendingGenerations: 10})
	}
	require.NoError(t, f.cat.UpsertShardStats(ctx, shards))
	var inFlight, peak atomic.Int32
	f.acts.Request = func(ctx context.Context, _ workflows.StoreRef, _ workflows.Request) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			if p := peak.Load(); n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for peak.Load() < 2 {
			if time.Now().After(deadline) {
				return fmt.Errorf("no other request was sent while this one was in flight")
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	val, err := f.env().ExecuteActivity(f.acts.SweepCandidates, workflows.SweepInput{})
	require.NoError(t, err)
	var res workflows.SweepResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, 4, res.Queued[workflows.OpMergeWAL])
	require.GreaterOrEqual(t, peak.Load(), int32(2))
}

// Registry cleanup reports a deleted store it cannot purge (here: registered under a location
// this server does not have) and goes on with the others; a purge never deletes the data of a
// store registered inside the purged one's directory, and an orphaned directory holding a
// registered store is never adopted.
func TestRegistryCleanupSkipsWhatItCannotPurgeAndNeverCrossesAnotherStore(t *testing.T) {
	f := newFixture(t, 0)
	reg := prometheus.NewRegistry()
	f.acts.Metrics = activities.NewMetrics(reg)
	ctx := context.Background()
	f.seed(t, "outer", 1, 3)
	outer, err := f.cat.GetStore(ctx, catalog.KindRollout, "outer")
	require.NoError(t, err)
	root := outer.URI[:strings.LastIndex(outer.URI, "/rollout/")]

	// Registered before prefixes were checked: a store inside outer's directory, with data.
	inner, _, err := f.cat.CreateStore(ctx, catalog.StoreDefinition{Kind: catalog.KindRollout, Name: "inner", URI: outer.URI + "/rollout/inner.0123456789abcdef"})
	require.NoError(t, err)
	innerFile := filepath.Join(strings.TrimPrefix(inner.URI, "file://"), "data.bin")
	require.NoError(t, os.MkdirAll(filepath.Dir(innerFile), 0o755))
	require.NoError(t, os.WriteFile(innerFile, []byte("inner's"), 0o644))
	// A store this server cannot reach.
	_, _, err = f.cat.CreateStore(ctx, catalog.StoreDefinition{Kind: catalog.KindRollout, Name: "unreachable", URI: "s3://other-bucket/rollout/unreachable.0123456789abcdef"})
	require.NoError(t, err)
	for _, name := range []string{"unreachable", "outer"} {
		_, err = f.cat.SoftDeleteStore(ctx, catalog.KindRollout, name)
		require.NoError(t, err)
	}
	time.Sleep(5 * time.Millisecond)

	for run := range 2 {
		val, err := f.env().ExecuteActivity(f.acts.RegistryCleanup, workflows.RegistryCleanupInput{Grace: time.Millisecond})
		require.NoError(t, err, "one store that cannot be purged does not fail the run")
		var res workflows.RegistryCleanupResult
		require.NoError(t, val.Get(&res))
		require.Equal(t, 1, res.PurgeFailures, "run %d", run)
		require.Len(t, res.PurgeFailed, 1)
		require.Contains(t, res.PurgeFailed[0], "rollout/unreachable")
		if run == 0 {
			require.Equal(t, 1, res.StoresPurged, "outer is purged")
		}
	}
	left, err := f.cat.ListDeletedStores(ctx, time.Now().Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, "unreachable", left[0].Name)
	families, err := reg.Gather()
	require.NoError(t, err)
	failures := 0.0
	for _, mf := range families {
		if mf.GetName() == "strata_registry_purge_failures_total" {
			failures = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	require.EqualValues(t, 2, failures, "strata_registry_purge_failures_total: one failure per run")
	data, err := os.ReadFile(innerFile)
	require.NoError(t, err, "the purge of outer left inner's data alone")
	require.Equal(t, "inner's", string(data))
	_, err = f.cat.GetStore(ctx, catalog.KindRollout, "inner")
	require.NoError(t, err)

	// An orphaned directory that holds a registered store is reported, never adopted.
	holder := strings.TrimPrefix(root, "file://") + "/rollout/holder.0123456789abcdef"
	require.NoError(t, os.MkdirAll(holder, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(holder, "x"), []byte("x"), 0o644))
	_, _, err = f.cat.CreateStore(ctx, catalog.StoreDefinition{Kind: catalog.KindRollout, Name: "held", URI: root + "/rollout/holder.0123456789abcdef/rollout/held.0123456789abcdef"})
	require.NoError(t, err)
	val, err := f.env().ExecuteActivity(f.acts.RegistryCleanup, workflows.RegistryCleanupInput{AdoptOrphans: true})
	require.NoError(t, err)
	var res workflows.RegistryCleanupResult
	require.NoError(t, val.Get(&res))
	require.Contains(t, res.OrphanURIs, root+"/rollout/holder.0123456789abcdef")
	_, err = f.cat.GetStore(ctx, catalog.KindRollout, "holder")
	require.ErrorIs(t, err, catalog.ErrNotFound, "not adopted")
}
