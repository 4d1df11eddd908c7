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
