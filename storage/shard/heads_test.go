package shard

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// A head's key names its shard and version; anything else under _heads/ is not a head.
func TestHeadKeysRoundTripAndOthersAreNotHeads(t *testing.T) {
	for _, shard := range []string{ShardID("worker-1"), "s1", "a.b"} {
		got, v, ok := parseHead(headKey(shard, 42))
		require.True(t, ok)
		require.Equal(t, shard, got)
		require.EqualValues(t, 42, v)
		require.True(t, strings.HasPrefix(headKey(shard, 42), headPrefix(shard)))
	}
	for _, key := range []string{
		"_heads/", "_heads/s1", "_heads/s1.", "_heads/.00000000000000000001", "_heads/s1.1",
		"_heads/s1.0000000000000000000x", "_heads/s1.00000000000000000000", "_shards/s1.00000000000000000001",
		"_heads/s1.000000000000000000001",
	} {
		_, _, ok := parseHead(key)
		require.False(t, ok, key)
	}
}

// headsReader reads a shard the way a snapshot does: one listing of the heads, then the manifest
// at the shard's highest head (listing its manifests only when it has none).
func headsReader(ctx context.Context, a *Access, shard string) (*ShardManifest, error) {
	heads, err := a.Heads(ctx)
	if err != nil {
		return nil, err
	}
	if h := heads[shard]; h > 0 {
		if m, ok := a.CachedManifestAtHead(shard, h); ok {
			return m, nil
		}
		return a.ManifestAtHead(ctx, shard, h)
	}
	return a.LatestManifest(ctx, shard)
}

// Randomized model: commits that crash after any of their writes (a dangling head), that
// lose their superseded head's deletion, sweeps of heads below the highest, and commits of every
// kind in between. After each step a reader at the heads finds exactly the newest manifest (the
// one a listing finds), and the heads left are few.
func TestReadersAtHeadsFindTheNewestManifestWhateverCrashedInBetween(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 57))
	mem := objstoretest.NewMemory()
	faulty := objstoretest.NewFaulty(mem)
	reader := NewAccess(faulty, nil, "id", nil, cache.New(1<<20, nil), nil, 0)
	const shard = "s1"
	commit := func() ([]string, error) {
		_, obsolete, err := UpdateManifest(ctx, faulty, shard, func(cur *ShardManifest) (*ShardManifest, error) {
			cur.NextGeneration++
			return cur, nil
		})
		return obsolete, err
	}
	var dangling, lostDeletes, sweeps int
	for step := range 400 {
		switch r := rng.IntN(10); {
		case r < 2: // the committer dies after its first or second write (a head, a manifest)
			faulty.CrashAfterWrites(rng.IntN(2))
			if _, err := commit(); err != nil {
				require.ErrorIs(t, err, objstoretest.ErrCrashed)
				dangling++
			}
			faulty.Reset()
		case r < 4: // it commits, then dies before deleting what it superseded
			_, err := commit()
			require.NoError(t, err)
			lostDeletes++
		case r < 5: // a writer's sweep
			heads, err := objstore.ListAllKeys(ctx, mem, headPrefix(shard))
			require.NoError(t, err)
			reader.deleteObjects(ctx, shard, headsBelow(heads))
			sweeps++
		default:
			obsolete, err := commit()
			require.NoError(t, err)
			reader.deleteObjects(ctx, shard, obsolete)
		}
		want, err := ReadManifest(ctx, mem, shard)
		require.NoError(t, err)
		got, err := headsReader(ctx, reader, shard)
		require.NoError(t, err)
		if want == nil {
			require.Nil(t, got, "step %d", step)
			continue
		}
		require.NotNil(t, got, "step %d", step)
		require.Equal(t, want.Version, got.Version, "step %d", step)
		require.Equal(t, want.NextGeneration, got.NextGeneration, "step %d", step)
	}
	require.Positive(t, dangling)
	require.Positive(t, lostDeletes)
	require.Positive(t, sweeps)
	heads, err := objstore.ListAllKeys(ctx, mem, headsDir)
	require.NoError(t, err)
	reader.deleteObjects(ctx, shard, headsBelow(heads))
	heads, err = objstore.ListAllKeys(ctx, mem, headsDir)
	require.NoError(t, err)
	require.Len(t, heads, 1, "a sweep leaves only the highest head")
}

// Committers race on one shard while readers read at the heads: a reader never sees a version
// older than the number of commits completed before it started (every commit adds one version),
// so a seal another process finished is never missed.
func TestReadersAtHeadsNeverMissACompletedCommit(t *testing.T) {
	ctx := context.Background()
	mem := objstoretest.NewMemory()
	const shard = "s1"
	var completed, unverified atomic.Uint64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			a := NewAccess(mem, nil, "id", nil, cache.New(1<<20, nil), nil, 0)
			for range 60 {
				_, obsolete, err := UpdateManifest(ctx, mem, shard, func(cur *ShardManifest) (*ShardManifest, error) {
					cur.NextGeneration++
					return cur, nil
				})
				if errors.Is(err, ErrCommitUnverified) {
					unverified.Add(1) // it may or may not have taken effect: not counted
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				completed.Add(1)
				a.deleteObjects(ctx, shard, obsolete)
			}
		})
	}
	var reads atomic.Int64
	for range 3 {
		wg.Go(func() {
			a := NewAccess(mem, nil, "id", nil, cache.New(1<<20, nil), nil, 0)
			for completed.Load()+unverified.Load() < 240 && !t.Failed() {
				before := completed.Load()
				m, err := headsReader(ctx, a, shard)
				if err != nil {
					t.Error(err)
					return
				}
				if before > 0 && (m == nil || m.Version < before) {
					t.Errorf("a completed commit was missed: %d completed before the read, it found %+v", before, m)
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	require.Positive(t, reads.Load())
	m, err := headsReader(ctx, NewAccess(mem, nil, "id", nil, nil, nil, 0), shard)
	require.NoError(t, err)
	require.GreaterOrEqual(t, m.Version, completed.Load(), "every commit that returned is on the chain")
	require.LessOrEqual(t, m.Version, completed.Load()+unverified.Load())
	t.Logf("%d commits, %d unverified", completed.Load(), unverified.Load())
}

// A shard whose manifests were committed by an earlier release has no heads: it is read by
// listing, and its first commit by this release gives it heads.
func TestAShardWithoutHeadsIsReadByListing(t *testing.T) {
	ctx := context.Background()
	mem := objstoretest.NewMemory()
	const shard = "s1"
	for v := uint64(1); v <= 3; v++ {
		require.NoError(t, mem.PutIfAbsent(ctx, ManifestKey(shard, v), []byte(`{"version":`+string(rune('0'+v))+`,"shard":"s1"}`)))
	}
	a := NewAccess(mem, nil, "id", nil, cache.New(1<<20, nil), nil, 0)
	heads, err := a.Heads(ctx)
	require.NoError(t, err)
	require.Empty(t, heads)
	m, err := headsReader(ctx, a, shard)
	require.NoError(t, err)
	require.EqualValues(t, 3, m.Version)

	_, _, err = UpdateManifest(ctx, mem, shard, func(cur *ShardManifest) (*ShardManifest, error) { return cur, nil })
	require.NoError(t, err)
	heads, err = a.Heads(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]uint64{shard: 4}, heads)
	m, err = headsReader(ctx, a, shard)
	require.NoError(t, err)
	require.EqualValues(t, 4, m.Version)
}

// A dangling head (its committer died between the head and the manifest) is repaired by an
// unchanged commit at its version; a head whose manifest is there, or that is no longer the
// highest, is left as it is.
func TestRepairHeadCommitsOverADanglingHeadOnly(t *testing.T) {
	ctx := context.Background()
	mem := objstoretest.NewMemory()
	a := NewAccess(mem, nil, "id", nil, cache.New(1<<20, nil), nil, 0)
	const shard = "s1"
	for range 3 {
		_, obsolete, err := UpdateManifest(ctx, mem, shard, func(cur *ShardManifest) (*ShardManifest, error) {
			cur.NextGeneration++
			return cur, nil
		})
		require.NoError(t, err)
		a.deleteObjects(ctx, shard, obsolete)
	}
	repaired, err := a.RepairHead(ctx, shard, 3)
	require.NoError(t, err)
	require.False(t, repaired, "manifest 3 is there")

	require.NoError(t, mem.Put(ctx, headKey(shard, 4), nil)) // a committer died after its head
	repaired, err = a.RepairHead(ctx, shard, 4)
	require.NoError(t, err)
	require.True(t, repaired)
	m, err := ReadManifest(ctx, mem, shard)
	require.NoError(t, err)
	require.EqualValues(t, 4, m.Version)
	require.EqualValues(t, 4, m.NextGeneration, "unchanged but for its version")
	repaired, err = a.RepairHead(ctx, shard, 4)
	require.NoError(t, err)
	require.False(t, repaired, "repaired once")

	require.NoError(t, mem.Put(ctx, headKey(shard, 5), nil)) // another one
	repaired, err = a.RepairHead(ctx, shard, 4)
	require.NoError(t, err)
	require.False(t, repaired, "4 is there, and no longer the highest")
	got, err := headsReader(ctx, a, shard)
	require.NoError(t, err)
	require.EqualValues(t, 4, got.Version, "5 dangles: the newest is 4")
	repaired, err = a.RepairHead(ctx, shard, 5)
	require.NoError(t, err)
	require.True(t, repaired)
	m, err = ReadManifest(ctx, mem, shard)
	require.NoError(t, err)
	require.EqualValues(t, 5, m.Version)
}
