package table

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// A randomized model of version cleanup, on a clock the test moves: writers upsert, delete,
// compact and build the key index, crashed writers leave files no manifest names, and cleanups
// run with random bounds. After every cleanup:
//   - no reachable object was deleted: every file a remaining manifest references exists, and
//     the latest version reads back the model;
//   - every unreachable object is gone within one cleanup after its TTL: a file no remaining
//     manifest references that was at least Grace old when the cleanup started, and a manifest
//     at least OlderThan old that is not among the KeepLatest newest.
func TestCleanupDeletesExactlyWhatNothingReaches(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("STRATA_MODEL_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (STRATA_MODEL_SEED repeats it)", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tbl, err := Create(ctx, store, testSchema, "id", Options{Allocator: mem, Now: func() time.Time { return clock }})
	require.NoError(t, err)
	// Objects are stamped with the test's clock when first seen (the memory store stamps the
	// wall clock): ModTime is then the step that wrote them.
	stamped := map[string]time.Time{}
	stamp := func() {
		objs, err := objstore.ListAll(ctx, store, "")
		require.NoError(t, err)
		for _, o := range objs {
			if _, ok := stamped[o.Key]; !ok {
				stamped[o.Key] = clock
				store.SetModTime(o.Key, clock)
			}
		}
	}
	want := model{}
	var seq uint64
	strays, cleanups, filesDeleted, versionsDeleted := 0, 0, 0, 0
	steps := 300
	if raceEnabled || testing.Short() {
		steps = 120
	}
	for step := range steps {
		clock = clock.Add(time.Duration(rng.IntN(20)) * time.Minute)
		switch op := rng.IntN(10); {
		case op < 5:
			var rows []row
			for range 1 + rng.IntN(10) {
				seq++
				rows = append(rows, row{id: fmt.Sprintf("k%02d", rng.IntN(40)), value: int64(rng.IntN(100)), payload: fmt.Sprint(step),
					seq: seq, tombstone: rng.IntN(6) == 0})
			}
			rec := batch(mem, rows)
			_, err := tbl.Upsert(ctx, rec, UpsertOptions{})
			rec.Release()
			require.NoError(t, err)
			want.apply(rows)
		case op < 6:
			_, err := tbl.BuildKeyIndex(ctx)
			require.NoError(t, err)
		case op < 7:
			_, err := tbl.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: int64(10 + rng.IntN(30))})
			require.NoError(t, err)
		case op < 8: // a writer that crashed after writing its files and before its commit
			strays++
			dir := []string{dataDir, deletesDir, indexDir}[rng.IntN(3)]
			require.NoError(t, store.PutIfAbsent(ctx, fmt.Sprintf("%sstray-%d", dir, strays), []byte("x")))
		default:
			stamp()
			opts := CleanupOptions{KeepLatest: 1 + rng.IntN(3), OlderThan: time.Duration(rng.IntN(90)) * time.Minute,
				Grace: time.Duration(1+rng.IntN(90)) * time.Minute}
			objectsBefore, err := objstore.ListAll(ctx, store, "")
			require.NoError(t, err)
			res, err := tbl.CleanupVersions(ctx, opts)
			require.NoError(t, err)
			cleanups++
			filesDeleted += res.FilesDeleted
			versionsDeleted += res.VersionsDeleted
			checkCleanup(t, ctx, store, tbl, objectsBefore, clock, opts)
			latest, err := tbl.Latest(ctx)
			require.NoError(t, err)
			require.Equal(t, want.live(), scanAll(t, tbl, latest), "step %d", step)
			require.NoError(t, tbl.Check(ctx, latest), "step %d", step)
		}
		stamp()
	}
	t.Logf("%d steps, %d cleanups deleted %d versions and %d files (%d strays written)", steps, cleanups, versionsDeleted, filesDeleted, strays)
	require.Positive(t, cleanups)
	require.Positive(t, filesDeleted)
	require.Positive(t, versionsDeleted)
}

// checkCleanup checks the store after a cleanup with opts at now, given what it held before.
func checkCleanup(t *testing.T, ctx context.Context, store objstore.Store, tbl *Table, before []objstore.ObjectInfo, now time.Time, opts CleanupOptions) {
	t.Helper()
	opts = opts.withDefaults() // as the cleanup read them (a zero OlderThan is an hour)
	after, err := objstore.ListAll(ctx, store, "")
	require.NoError(t, err)
	present := map[string]bool{}
	for _, o := range after {
		present[o.Key] = true
	}
	// The manifests left, and what they reach.
	var versions []objstore.ObjectInfo
	reached := map[string]bool{}
	for _, o := range after {
		v, ok := parseVersionKey(o.Key)
		if !ok {
			continue
		}
		versions = append(versions, o)
		m, err := readManifest(ctx, store, v)
		require.NoError(t, err)
		for _, p := range manifestFiles(m) {
			reached[p] = true
			require.True(t, present[p], "v%d references %s, which cleanup deleted", v, p)
		}
	}
	newest := map[string]bool{}
	for i := len(versions) - 1; i >= 0 && len(newest) < opts.KeepLatest; i-- { // ListAll lists in key order: ascending versions
		newest[versions[i].Key] = true
	}
	for _, o := range before {
		if !present[o.Key] || IsRewrittenKey(o.Key) { // the latest-version hint is rewritten, never garbage
			continue
		}
		if _, ok := parseVersionKey(o.Key); ok {
			require.False(t, now.Sub(o.ModTime) >= opts.OlderThan && !newest[o.Key], "expired manifest %s (%s old, %+v) kept", o.Key, now.Sub(o.ModTime), opts)
			continue
		}
		require.False(t, !reached[o.Key] && now.Sub(o.ModTime) >= opts.Grace, "unreferenced %s, %s old (grace %s), kept", o.Key, now.Sub(o.ModTime), opts.Grace)
	}
}
