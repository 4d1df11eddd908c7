// Tests of what one read's snapshot sees and how it reads it.
package lsm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
)

// A store written by many workers: a snapshot checks their shard manifests at most
// snapshotConcurrency at a time, not one after another (on an object store each check is a
// round trip) and not all at once; and it still sees every worker's sealed rows.
func TestASnapshotChecksShardManifestsConcurrentlyWithinItsBound(t *testing.T) {
	ctx := context.Background()
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	const workers = snapshotConcurrency + 4
	for w := range workers {
		s := e.open(fmt.Sprintf("worker-%02d", w))
		appendIDs(t, s, e.mem, int64(w), fmt.Sprintf("k%02d", w))
		require.NoError(t, s.Flush(ctx))
		// Closed, so that its shard's background work (the WAL garbage collector lists its
		// manifests too) cannot be counted, or held, as one of the snapshot's checks.
		require.NoError(t, s.Close(ctx))
	}
	reader := e.open("reader", func(o *Options) { o.ReadOnly = true })

	var started atomic.Int32
	stuck := make(chan struct{})
	var release sync.Once
	unstick := func() { release.Do(func() { close(stuck) }) }
	t.Cleanup(unstick) // a failed assertion must not leave calls held while the stores close
	faulty.AddRule(objstoretest.Rule{
		Match: func(op objstoretest.Op, key string) bool {
			if op == objstoretest.OpList && strings.HasPrefix(key, shard.WALDir) && strings.HasSuffix(key, "/manifest/") {
				started.Add(1)
				return true
			}
			return false
		},
		Stuck: stuck,
	})
	type result struct {
		snap *Snapshot
		err  error
	}
	done := make(chan result, 1)
	go func() {
		snap, err := reader.Snapshot(ctx)
		done <- result{snap, err}
	}()
	require.Eventually(t, func() bool { return started.Load() >= snapshotConcurrency }, 10*time.Second, time.Millisecond,
		"the snapshot's manifest checks did not run concurrently")
	time.Sleep(50 * time.Millisecond) // room for a check past the bound to start, were there one
	require.EqualValues(t, snapshotConcurrency, started.Load(), "more checks ran at once than the bound")
	unstick()
	r := <-done
	require.NoError(t, r.err)
	require.Len(t, r.snap.Shards, workers)
	require.EqualValues(t, workers, started.Load())
	for _, sh := range r.snap.Shards {
		require.Len(t, sh.Generations, 1, "shard %s", sh.Shard)
	}
}

// After a store's first read in a process, a read of a store written by many workers lists only
// the store's shard heads — no shard's manifests, not the shard markers — and still sees every
// worker's sealed rows, including rows sealed after the previous read.
func TestAReadOfManyShardsListsOnlyTheirHeads(t *testing.T) {
	ctx := context.Background()
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	const workers = 12
	stores := make([]*Store, workers)
	for w := range workers {
		stores[w] = e.open(fmt.Sprintf("worker-%02d", w))
		appendIDs(t, stores[w], e.mem, int64(w), fmt.Sprintf("k%02d", w))
		require.NoError(t, stores[w].Flush(ctx))
	}
	reader := e.open("reader", func(o *Options) { o.ReadOnly = true })
	_, err := reader.Snapshot(ctx) // the first read lists everything
	require.NoError(t, err)

	var mu sync.Mutex
	listed := map[string]int{}
	var reading atomic.Bool // count the reader's listings, not a writer's seal's
	faulty.AddRule(objstoretest.Rule{Match: func(op objstoretest.Op, key string) bool {
		if op == objstoretest.OpList && reading.Load() {
			mu.Lock()
			listed[strings.SplitAfter(key, "/")[0]]++
			mu.Unlock()
		}
		return false
	}})
	read := func(key string) int64 {
		reading.Store(true)
		defer reading.Store(false)
		return value(t, reader, key)
	}
	for w := range workers {
		require.EqualValues(t, w, read(fmt.Sprintf("k%02d", w)))
	}
	appendIDs(t, stores[3], e.mem, 33, "k03")
	require.NoError(t, stores[3].Flush(ctx))
	require.EqualValues(t, 33, read("k03"), "a seal after the previous read")

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, workers+1, listed["_heads/"], "one listing of the heads a read")
	require.Zero(t, listed["_shards/"])
	require.Zero(t, listed[shard.WALDir], "no shard's manifests listed")
}

// A shard without heads (its manifests committed by an earlier release) is found by the read
// that rechecks the store's shards and read by listing its manifests until it has heads; and a
// commit that wrote no head (an earlier release's writer, still running) is seen by the next
// recheck, at most ShardRecheckInterval later.
func TestShardsWithoutHeadsAreReadByListing(t *testing.T) {
	ctx := context.Background()
	mem := objstoretest.NewMemory()
	e := newEnv(t, mem)
	deleteHeads := func(keep uint64) {
		heads, err := e.objects.List(ctx, "_heads/", "", 1000)
		require.NoError(t, err)
		for _, o := range heads.Objects {
			require.NoError(t, e.objects.Delete(ctx, o.Key))
		}
		if keep > 0 {
			require.NoError(t, e.objects.Put(ctx, fmt.Sprintf("_heads/%s.%020d", shard.ShardID("old"), keep), nil))
		}
	}
	old := e.open("old")
	appendIDs(t, old, e.mem, 1, "a")
	require.NoError(t, old.Flush(ctx))
	deleteHeads(0)

	reader := e.open("reader", func(o *Options) { o.ReadOnly = true; o.ShardRecheckInterval = 300 * time.Millisecond })
	require.EqualValues(t, 1, value(t, reader, "a"), "the recheck")
	require.EqualValues(t, 1, value(t, reader, "a"), "by listing its manifests")
	appendIDs(t, old, e.mem, 2, "a")
	require.NoError(t, old.Flush(ctx))
	deleteHeads(0)
	require.EqualValues(t, 2, value(t, reader, "a"), "still by listing")

	// Heads again (this release's commit), then a commit that writes none: the highest head is
	// one version behind the manifest.
	appendIDs(t, old, e.mem, 3, "a")
	require.NoError(t, old.Flush(ctx))
	require.EqualValues(t, 3, value(t, reader, "a"))
	m, err := shard.ReadManifest(ctx, e.objects, shard.ShardID("old"))
	require.NoError(t, err)
	appendIDs(t, old, e.mem, 4, "a")
	require.NoError(t, old.Flush(ctx))
	deleteHeads(m.Version)
	require.Eventually(t, func() bool { return value(t, reader, "a") == 4 }, 5*time.Second, 20*time.Millisecond,
		"the recheck finds the commit that wrote no head")
}

// A merge repairs a dangling head (a committer that died between a shard's head and its
// manifest), here on a shard with nothing left to merge (no other commit would come): afterwards
// the manifest at the shard's highest head is there, and reads see the shard's rows throughout.
func TestAMergeRepairsADanglingHead(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	w := e.open("writer")
	appendIDs(t, w, e.mem, 1, "a", "b")
	require.NoError(t, w.Flush(ctx))
	maint := e.open("maintenance", func(o *Options) { o.ReadOnly = true })
	_, err := maint.Merge(ctx, MergeOptions{}, 0)
	require.NoError(t, err)
	sh := shard.ShardID("writer")
	m, err := shard.ReadManifest(ctx, e.objects, sh)
	require.NoError(t, err)
	require.Empty(t, m.Generations)
	require.NoError(t, e.objects.Put(ctx, fmt.Sprintf("_heads/%s.%020d", sh, m.Version+1), nil))

	reader := e.open("reader", func(o *Options) { o.ReadOnly = true })
	for range 2 { // the first read lists every shard, the second reads at the heads
		require.EqualValues(t, 1, value(t, reader, "a"), "read past the dangling head")
	}
	_, err = maint.Merge(ctx, MergeOptions{}, 0)
	require.NoError(t, err)
	repaired, err := shard.ReadManifest(ctx, e.objects, sh)
	require.NoError(t, err)
	require.Equal(t, m.Version+1, repaired.Version, "the merge committed at the dangling head's version")
	require.Equal(t, m.Epoch, repaired.Epoch, "and changed nothing else")
	require.EqualValues(t, 1, value(t, reader, "b"))
	require.NoError(t, shard.Check(ctx, e.objects, sh))
}
