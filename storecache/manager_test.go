package storecache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

func newManager(t *testing.T, capacity int) (*Manager, *catalog.Catalog, *prometheus.Registry) {
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	reg := prometheus.NewRegistry()
	m, err := New(cat, Config{DataURL: t.TempDir(), Capacity: capacity, Store: lsm.Options{Instance: "w"}},
		reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m, cat, reg
}

func appendOne(t *testing.T, s *lsm.Store, id string) {
	rec := kinds.MinimalRolloutBatch(memory.DefaultAllocator, id)
	defer rec.Release()
	_, err := s.Append(context.Background(), rec)
	require.NoError(t, err)
}

func TestConcurrentFirstOpensOpenOnce(t *testing.T) {
	m, _, reg := newManager(t, 10)
	_, _, err := m.Create(context.Background(), catalog.KindRollout, "s", nil, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([]*lsm.Store, 12)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, release, err := m.Acquire(context.Background(), catalog.KindRollout, "s")
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			got[i] = s
		}()
	}
	wg.Wait()
	for _, s := range got {
		require.Same(t, got[0], s)
	}
	require.EqualValues(t, 1, testutil.ToFloat64(m.resident))
	_ = reg
	_, _, err = m.Acquire(context.Background(), catalog.KindRollout, "missing")
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

func TestAnEvictedStoreStaysUsableUntilReleasedAndKeepsItsRows(t *testing.T) {
	m, _, _ := newManager(t, 1)
	for _, n := range []string{"a", "b"} {
		_, _, err := m.Create(context.Background(), catalog.KindRollout, n, nil, nil)
		require.NoError(t, err)
	}
	a, releaseA, err := m.Acquire(context.Background(), catalog.KindRollout, "a")
	require.NoError(t, err)
	appendOne(t, a, "row-1")
	_, releaseB, err := m.Acquire(context.Background(), catalog.KindRollout, "b") // evicts a
	require.NoError(t, err)
	releaseB()
	appendOne(t, a, "row-2") // still open: a user holds it
	releaseA()               // now it is sealed and closed
	require.Eventually(t, func() bool {
		again, release, err := m.Acquire(context.Background(), catalog.KindRollout, "a")
		require.NoError(t, err)
		defer release()
		rec, err := again.Get(context.Background(), "row-2", []string{"id"})
		require.NoError(t, err)
		if rec == nil {
			return false
		}
		rec.Release()
		return true
	}, 5*time.Second, 20*time.Millisecond)
}

func TestFlushPassSealsAndReportsShardStats(t *testing.T) {
	m, cat, reg := newManager(t, 10)
	_, _, err := m.Create(context.Background(), catalog.KindRollout, "s", nil, nil)
	require.NoError(t, err)
	s, release, err := m.Acquire(context.Background(), catalog.KindRollout, "s")
	require.NoError(t, err)
	appendOne(t, s, "r")
	release()
	metrics := NewSweeperMetrics(reg)
	m.FlushPass(context.Background(), time.Second, metrics)
	st, err := cat.GetStoreStats(context.Background(), catalog.KindRollout, "s")
	require.NoError(t, err)
	require.Equal(t, 1, st.PendingGenerations)
	require.NotNil(t, st.OldestPendingAt)
	require.EqualValues(t, 1, testutil.ToFloat64(metrics.flushes.WithLabelValues("sealed")))
	m.FlushPass(context.Background(), time.Second, metrics)
	require.EqualValues(t, 1, testutil.ToFloat64(metrics.flushes.WithLabelValues("idle")))
}

func TestCloseSealsEveryResidentStore(t *testing.T) {
	m, cat, _ := newManager(t, 10)
	_, _, err := m.Create(context.Background(), catalog.KindRollout, "s", nil, nil)
	require.NoError(t, err)
	s, release, err := m.Acquire(context.Background(), catalog.KindRollout, "s")
	require.NoError(t, err)
	appendOne(t, s, "unsealed")
	release()
	require.NoError(t, m.Close(context.Background()))

	// Another worker (another instance id) sees the row: it was sealed at shutdown, not left to a replay.
	other, err := New(cat, Config{DataURL: m.DataURL(), Store: lsm.Options{Instance: "other"}}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	defer other.Close(context.Background())
	s2, release2, err := other.Acquire(context.Background(), catalog.KindRollout, "s")
	require.NoError(t, err)
	defer release2()
	rec, err := s2.Get(context.Background(), "unsealed", []string{"id"})
	require.NoError(t, err)
	require.NotNil(t, rec)
	rec.Release()
}

func TestAStoreDeletedThroughAnotherWorkerIsClosedByTheNextFlushPass(t *testing.T) {
	ctx := context.Background()
	a, cat, _ := newManager(t, 10)
	b, err := New(cat, Config{DataURL: a.DataURL(), Capacity: 10, Store: lsm.Options{Instance: "b"}},
		nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(ctx) })
	for _, n := range []string{"gone", "renewed", "kept"} {
		_, _, err := a.Create(ctx, catalog.KindRollout, n, nil, nil)
		require.NoError(t, err)
		s, release, err := b.Acquire(ctx, catalog.KindRollout, n)
		require.NoError(t, err)
		appendOne(t, s, "r")
		release()
	}
	_, oldRenewed, release, err := b.AcquireEntry(ctx, catalog.KindRollout, "renewed")
	require.NoError(t, err)
	release()

	require.NoError(t, a.Delete(ctx, catalog.KindRollout, "gone"))
	require.NoError(t, a.Delete(ctx, catalog.KindRollout, "renewed"))
	_, _, err = a.Create(ctx, catalog.KindRollout, "renewed", nil, nil)
	require.NoError(t, err)
	_, release, err = b.Acquire(ctx, catalog.KindRollout, "gone")
	require.NoError(t, err, "before the pass, b still has the deleted store resident")
	release()

	b.FlushPass(ctx, time.Second, nil)
	_, _, err = b.Acquire(ctx, catalog.KindRollout, "gone")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, renewed, release, err := b.AcquireEntry(ctx, catalog.KindRollout, "renewed")
	require.NoError(t, err)
	release()
	require.NotEqual(t, oldRenewed.ID, renewed.ID, "b opened the new incarnation")
	s, release, err := b.Acquire(ctx, catalog.KindRollout, "kept")
	require.NoError(t, err)
	defer release()
	rec, err := s.Get(ctx, "r", []string{"id"})
	require.NoError(t, err)
	require.NotNil(t, rec, "a live store stays resident with its rows")
	rec.Release()
}

// A fenced store is logged once, however often its appends fail, and counted for health.
func TestAFencedStoreIsLoggedOnce(t *testing.T) {
	m, _, _ := newManager(t, 4)
	var logs bytes.Buffer
	m.log = slog.New(slog.NewTextHandler(&logs, nil))
	for range 3 {
		m.ReportFenced(catalog.KindRollout, "a")
	}
	m.ReportFenced(catalog.KindGeneric, "b")
	require.Equal(t, 2, strings.Count(logs.String(), "claimed the store's write shard"))
	require.Equal(t, 2, m.FencedStores())
}

// Stores can live on S3: two processes (an API worker and a read-only maintenance worker) that
// share only the bucket and the catalog create, append, seal, merge and read a store, and the
// store's URI names its place in the bucket without connection options.
func TestStoresLiveOnS3(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	dataURL := testenv.S3(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	api, err := New(cat, Config{DataURL: dataURL, Store: lsm.Options{Instance: "api"}}, nil, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = api.Close(ctx) })
	maint, err := New(cat, Config{DataURL: dataURL, Store: lsm.Options{Instance: "api", ReadOnly: true}}, nil, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = maint.Close(ctx) })

	st, created, err := api.Create(ctx, catalog.KindRollout, "on-s3", nil, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.True(t, strings.HasPrefix(st.URI, "s3://"), st.URI)
	require.NotContains(t, st.URI, "?", "no connection options in a store's URI")
	s, release, err := api.Acquire(ctx, catalog.KindRollout, "on-s3")
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		appendOne(t, s, id)
	}
	require.NoError(t, s.Flush(ctx))
	shard := s.Shard()
	release()

	m, release, err := maint.Acquire(ctx, catalog.KindRollout, "on-s3")
	require.NoError(t, err)
	res, err := m.MergeShard(ctx, shard, lsm.MergeOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Generations)
	for _, id := range []string{"a", "b", "c"} {
		rec, err := m.Get(ctx, id, []string{"id"})
		require.NoError(t, err)
		require.NotNil(t, rec, id)
		rec.Release()
	}
	release()

	// Registry cleanup purges a deleted store's objects from the bucket.
	require.NoError(t, api.Delete(ctx, catalog.KindRollout, "on-s3"))
	deleted, err := cat.ListDeletedStores(ctx, time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, deleted, 1)
	n, err := api.Purge(ctx, deleted[0])
	require.NoError(t, err)
	require.Positive(t, n)
	root, err := objstore.Open(ctx, dataURL)
	require.NoError(t, err)
	left, err := objstore.ListAll(ctx, root, "rollout/")
	require.NoError(t, err)
	require.Empty(t, left, "nothing of the purged store is left in the bucket")
}

// storage_options choose among the operator's storage locations (by name) and a sub-path under
// one: a store created in the named location "elsewhere" lives there and is found there by any
// process configured with that location; options that would choose a host, a bucket or a
// credential, unknown keys, and prefixes that could nest one store inside another are refused
// before anything is registered; a process without the location answers a storage fault for
// the store, never a request to some other place.
func TestStorageOptionsChooseAnOperatorLocation(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	dataURL, elsewhereURL := testenv.S3(t), testenv.S3(t)
	locations := []Location{{Name: "elsewhere", URL: elsewhereURL}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := New(cat, Config{DataURL: dataURL, Locations: locations, Store: lsm.Options{Instance: "api"}}, nil, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(ctx) })
	require.Equal(t, []string{"default", "elsewhere"}, m.Locations())

	for _, bad := range []string{`{"aws_access_key_id": "AKIA"}`, `{"prefix": "../up"}`, `{"prefix": "a?b"}`, `{"prefix": "a#b"}`,
		`{"endpoint": "http://169.254.169.254:80"}`, `{"bucket": "b"}`, `{"bucket": "b", "endpoint": "http://127.0.0.1:1", "path_style": "true"}`,
		`{"region": "r"}`, `{"prefix": 3}`, `{"location": "nowhere"}`, `{"prefix": "rollout/b.x"}`, `{"prefix": "team/generic"}`,
		`{"prefix": "a/victim.0123456789abcdef"}`, `{"prefix": "` + strings.Repeat("x", 300) + `"}`, `{"prefix": "a b"}`,
		`{"prefix": "a%zz"}`, `{"prefix": "_versions"}`, `{"prefix": "a/b/c/d/e/f/g/h/i"}`, `{"seal_on_add": "x", "secret": "y"}`} {
		_, _, err := m.Create(ctx, catalog.KindRollout, "bad", nil, []byte(bad))
		require.ErrorIs(t, err, catalog.ErrInvalid, bad)
	}
	_, err = cat.GetStore(ctx, catalog.KindRollout, "bad")
	require.ErrorIs(t, err, catalog.ErrNotFound, "a refused definition registers nothing")

	u, err := url.Parse(elsewhereURL)
	require.NoError(t, err)
	u.RawQuery = ""
	for name, options := range map[string]string{"prefixed": `{"prefix": "team-a/stores"}`, "elsewhere": `{"location": "elsewhere", "prefix": "p"}`} {
		st, created, err := m.Create(ctx, catalog.KindRollout, name, nil, []byte(options))
		require.NoError(t, err, name)
		require.True(t, created)
		require.NotContains(t, st.URI, "?", "no connection options in the URI")
		if name == "prefixed" {
			require.Contains(t, st.URI, "/team-a/stores/rollout/prefixed.")
		} else {
			require.True(t, strings.HasPrefix(st.URI, u.String()+"/p/rollout/elsewhere."), st.URI)
		}
		s, release, err := m.Acquire(ctx, catalog.KindRollout, name)
		require.NoError(t, err)
		appendOne(t, s, "row-1")
		require.NoError(t, s.Flush(ctx))
		release()
		// Another process configured with the same locations finds it through the catalog row.
		other, err := New(cat, Config{DataURL: dataURL, Locations: locations, Store: lsm.Options{Instance: "reader", ReadOnly: true}}, nil, log)
		require.NoError(t, err)
		r, release, err := other.Acquire(ctx, catalog.KindRollout, name)
		require.NoError(t, err)
		rec, err := r.Get(ctx, "row-1", []string{"id"})
		require.NoError(t, err)
		require.NotNil(t, rec, name)
		rec.Release()
		release()
		require.NoError(t, other.Close(ctx))
	}

	// A process without the location cannot open the store there: a storage fault, no request.
	bare, err := New(cat, Config{DataURL: dataURL, Store: lsm.Options{Instance: "bare", ReadOnly: true}}, nil, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = bare.Close(ctx) })
	_, _, err = bare.Acquire(ctx, catalog.KindRollout, "elsewhere")
	require.ErrorIs(t, err, objstore.ErrUnavailable)
}

// Locations are checked at start: well-formed names, no location inside another.
func TestLocationsMayNotOverlap(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, locs := range [][]Location{
		{{Name: "inner", URL: "file://" + dir + "/inner"}},
		{{Name: "a", URL: "file://" + t.TempDir()}, {Name: "a", URL: "file://" + t.TempDir()}},
		{{Name: "default", URL: "file://" + t.TempDir()}},
		{{Name: "Bad Name", URL: "file://" + t.TempDir()}},
	} {
		_, err := New(cat, Config{DataURL: "file://" + dir, Locations: locs}, nil, log)
		require.Error(t, err, "%v", locs)
	}
	got, err := ParseLocations("a=file:///x, b=s3://bucket/p?endpoint=http://h:9000&region=r")
	require.NoError(t, err)
	require.Equal(t, []Location{{"a", "file:///x"}, {"b", "s3://bucket/p?endpoint=http://h:9000&region=r"}}, got)
	for _, bad := range []string{"a", "a=", "default=file:///x", "a=file:///x,a=file:///y", "A=file:///x", "a=ftp://h/x"} {
		_, err := ParseLocations(bad)
		require.Error(t, err, bad)
	}
}

// Options are decoded for the store's kind with unknown keys refused: a rollout's options are
// its storage options; a generic store's carry storage_options and seal_on_add.
func TestStoreOptionsAreDecodedPerKind(t *testing.T) {
	for _, c := range []struct {
		kind catalog.Kind
		raw  string
		want storeOptions
	}{
		{catalog.KindRollout, ``, storeOptions{}},
		{catalog.KindRollout, `null`, storeOptions{}},
		{catalog.KindRollout, `{"prefix": "p"}`, storeOptions{Storage: map[string]string{"prefix": "p"}}},
		{catalog.KindGeneric, `{"storage_options": {"prefix": "p"}, "seal_on_add": true}`, storeOptions{Storage: map[string]string{"prefix": "p"}, SealOnAdd: true}},
		{catalog.KindGeneric, `{"seal_on_add": false}`, storeOptions{}},
		{catalog.KindGeneric, `{"storage_options": null, "seal_on_add": true}`, storeOptions{SealOnAdd: true}},
	} {
		got, err := decodeStoreOptions(c.kind, []byte(c.raw))
		require.NoError(t, err, c.raw)
		require.Equal(t, c.want, got, c.raw)
	}
	for _, bad := range []struct {
		kind catalog.Kind
		raw  string
	}{
		{catalog.KindRollout, `[1]`}, {catalog.KindRollout, `{"prefix": 1}`}, {catalog.KindGeneric, `{"storage_options": "x", "seal_on_add": true}`},
		{catalog.KindGeneric, `{"storage_options": {}, "secret": "x"}`}, {catalog.KindGeneric, `{"prefix": "p"}`},
	} {
		_, err := decodeStoreOptions(bad.kind, []byte(bad.raw))
		require.ErrorIs(t, err, catalog.ErrInvalid, bad.raw)
	}
}

// A seal that leaves the shard at the merge threshold asks for a merge at once (rate-limited per
// store); seals below it do not.
func TestASealAtTheMergeThresholdAsksForAMerge(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	var mu sync.Mutex
	var asked []string
	m, err := New(cat, Config{DataURL: t.TempDir(), Store: lsm.Options{Instance: "w"}, MergeAfterGenerations: 3,
		RequestMerge: func(_ context.Context, kind catalog.Kind, name string) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, string(kind)+"/"+name)
			return nil
		}}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	_, _, err = m.Create(ctx, catalog.KindRollout, "busy", nil, nil)
	require.NoError(t, err)
	s, release, err := m.Acquire(ctx, catalog.KindRollout, "busy")
	require.NoError(t, err)
	for i := range 5 {
		appendOne(t, s, fmt.Sprintf("r%d", i))
		require.NoError(t, s.Flush(ctx))
		if i < 2 {
			mu.Lock()
			require.Empty(t, asked, "below the threshold: no request")
			mu.Unlock()
		}
	}
	release()
	require.NoError(t, m.Close(ctx)) // sends what is queued
	require.Equal(t, []string{"rollout/busy"}, asked, "one request: the next seals fall within the rate limit")
}

// A flush stuck in a storage call deaf to its context does not stall the pass: the pass gives up
// on it after the flush timeout (plus a grace), seals the other stores, and later passes skip the
// stuck store until its call returns; then it is sealed like any other.
func TestAHungFlushDoesNotStallThePass(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	var faults *objstoretest.Faulty
	reg := prometheus.NewRegistry()
	m, err := New(cat, Config{DataURL: t.TempDir(), Store: lsm.Options{Instance: "w"}, FlushTimeout: 100 * time.Millisecond,
		WrapObjects: func(s objstore.Store) objstore.Store { faults = objstoretest.NewFaulty(s); return faults }},
		reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	metrics := NewSweeperMetrics(reg)
	for _, name := range []string{"stuck", "fine"} {
		_, _, err := m.Create(ctx, catalog.KindRollout, name, nil, nil)
		require.NoError(t, err)
		s, release, err := m.Acquire(ctx, catalog.KindRollout, name)
		require.NoError(t, err)
		appendOne(t, s, "r1")
		release()
	}
	_, entry, release, err := m.AcquireEntry(ctx, catalog.KindRollout, "stuck")
	require.NoError(t, err)
	release()
	stuckDir := strings.TrimPrefix(entry.URI, m.rootURL+"/") + "/"
	hung := make(chan struct{})
	faults.AddRule(objstoretest.Rule{Stuck: hung, Match: func(_ objstoretest.Op, key string) bool { return strings.HasPrefix(key, stuckDir) }})

	start := time.Now()
	m.FlushPass(ctx, time.Second, metrics)
	require.Less(t, time.Since(start), 5*time.Second+2*time.Second, "the pass went on without the stuck store")
	st, err := cat.GetStoreStats(ctx, catalog.KindRollout, "fine")
	require.NoError(t, err)
	require.Equal(t, 1, st.PendingGenerations, "the other store was sealed and reported")
	require.EqualValues(t, 1, testutil.ToFloat64(metrics.flushes.WithLabelValues("timeout")))

	m.FlushPass(ctx, time.Second, metrics)
	require.EqualValues(t, 1, testutil.ToFloat64(metrics.flushes.WithLabelValues("busy")), "the stuck store is skipped while its flush hangs")

	faults.Reset()
	close(hung)
	require.Eventually(t, func() bool {
		m.FlushPass(ctx, time.Second, metrics)
		st, err := cat.GetStoreStats(ctx, catalog.KindRollout, "stuck")
		return err == nil && st.PendingGenerations == 1
	}, 10*time.Second, 50*time.Millisecond, "once its storage answers, the store is sealed")
	require.NoError(t, m.Close(ctx))
}

// Stores registered under no configured location (created with an endpoint of their own before
// locations existed) are counted and named at start, and do not open; configuring a location that
// contains them is the migration.
func TestStoresOutsideTheLocationsAreReported(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	var logs bytes.Buffer
	dir := t.TempDir()
	m, err := New(cat, Config{DataURL: "file://" + dir + "/data"}, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(ctx) })
	_, _, err = m.Create(ctx, catalog.KindRollout, "inside", nil, nil)
	require.NoError(t, err)
	legacy := "file://" + dir + "/legacy/rollout/old.0123456789abcdef"
	_, _, err = cat.CreateStore(ctx, catalog.StoreDefinition{Kind: catalog.KindRollout, Name: "0-old-" + filepath.Base(dir), URI: legacy})
	require.NoError(t, err)
	// Other packages' tests share the catalog: the name sorts first among what the log names.
	name := "0-old-" + filepath.Base(dir)
	n, err := m.ReportStoresOutsideLocations(ctx)
	require.NoError(t, err)
	require.Positive(t, n)
	require.Contains(t, logs.String(), name)
	require.NotContains(t, logs.String(), "rollout/inside")
	_, _, err = m.Acquire(ctx, catalog.KindRollout, name)
	require.ErrorIs(t, err, objstore.ErrUnavailable)

	with, err := New(cat, Config{DataURL: "file://" + dir + "/data", Locations: []Location{{Name: "legacy", URL: "file://" + dir + "/legacy"}}}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = with.Close(ctx) })
	_, release, err := with.Acquire(ctx, catalog.KindRollout, name)
	require.NoError(t, err, "a location that contains it brings it back (its table is created when missing)")
	release()
}
