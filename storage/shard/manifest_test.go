package shard

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// The object cache keeps only each shard's newest manifest: a newer version replaces the one
// before (an older one arriving late does not displace it).
func TestOnlyEachShardsNewestManifestStaysCached(t *testing.T) {
	c := newShardManifestCache(cache.New(1<<20, nil).Namespace())
	m := func(shard string) *ShardManifest { return &ShardManifest{Shard: shard} }
	c.Add(ManifestKey("s1", 1), m("s1"))
	c.Add(ManifestKey("s2", 1), m("s2"))
	c.Add(ManifestKey("s1", 2), m("s1"))
	_, ok := c.Get(ManifestKey("s1", 1))
	require.False(t, ok, "superseded")
	for _, key := range []string{ManifestKey("s1", 2), ManifestKey("s2", 1)} {
		_, ok := c.Get(key)
		require.True(t, ok, key)
	}
	c.Add(ManifestKey("s1", 1), m("s1")) // a late reader of an old version
	_, ok = c.Get(ManifestKey("s1", 2))
	require.True(t, ok, "the newest stays")
}

// A reader lists only the versions after the newest it has seen, yet always finds the newest:
// after other processes committed many versions and deleted the one it knew, and when nothing
// changed (then it lists nothing past its own and reads nothing).
func TestReadersFindTheNewestManifestPastTheOneTheyKnew(t *testing.T) {
	ctx := context.Background()
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	reader := NewAccess(counting, nil, "id", nil, cache.New(1<<20, nil), nil, 0)
	bump := func(n int) {
		for range n {
			_, obsolete, err := UpdateManifest(ctx, counting, "s1", func(cur *ShardManifest) (*ShardManifest, error) {
				cur.NextGeneration++
				return cur, nil
			})
			require.NoError(t, err)
			reader.deleteObjects(ctx, "s1", obsolete) // as the edit's owner does
		}
	}
	bump(1)
	m, err := reader.LatestManifest(ctx, "s1")
	require.NoError(t, err)
	require.EqualValues(t, 1, m.Version)

	bump(3*keepManifests + 2) // version 1 and its successors are deleted meanwhile
	_, err = counting.Stat(ctx, ManifestKey("s1", 1))
	require.Error(t, err, "the version the reader knew is gone")
	m, err = reader.LatestManifest(ctx, "s1")
	require.NoError(t, err)
	require.EqualValues(t, 3*keepManifests+3, m.Version)

	before := counting.Stats()
	again, err := reader.LatestManifest(ctx, "s1")
	require.NoError(t, err)
	require.Same(t, m, again, "unchanged: served from the cache")
	require.Zero(t, counting.Stats().Sub(before).Reads, "an unchanged shard costs no read")
}

// A committer that read version v as the newest and stalled while others committed far past it
// (and deleted v+1 as obsolete) re-creates v+1 with its put-if-absent: that commit is off the
// chain, so UpdateManifest re-applies the edit on the newest version instead of reporting a
// commit that took no effect. Past recentCommitIDs commits it cannot tell, and says so.
func TestACommitOffTheManifestChainIsRetriedNotReported(t *testing.T) {
	ctx := context.Background()
	for _, others := range []int{3 * keepManifests, recentCommitIDs + keepManifests} {
		mem := objstoretest.NewMemory()
		a := NewAccess(mem, nil, "id", nil, nil, nil, 0)
		const shard = "s1"
		bump := func(cur *ShardManifest) (*ShardManifest, error) {
			cur.NextGeneration++
			return cur, nil
		}
		commit := func() {
			_, obsolete, err := UpdateManifest(ctx, mem, shard, bump)
			require.NoError(t, err)
			a.deleteObjects(ctx, shard, obsolete)
		}
		commit()
		stalled := true
		var edits int
		next, _, err := UpdateManifest(ctx, mem, shard, func(cur *ShardManifest) (*ShardManifest, error) {
			edits++
			if stalled { // others commit past it meanwhile
				stalled = false
				for range others {
					commit()
				}
			}
			return bump(cur)
		})
		latest, rerr := ReadManifest(ctx, mem, shard)
		require.NoError(t, rerr)
		if others < recentCommitIDs {
			require.NoError(t, err)
			require.Equal(t, 2, edits, "re-applied once, on the newest")
			require.EqualValues(t, others+2, next.Version)
			require.Equal(t, latest.Version, next.Version)
			require.EqualValues(t, others+3, latest.NextGeneration, "every edit took effect once")
			continue
		}
		require.ErrorIs(t, err, ErrCommitUnverified)
		require.EqualValues(t, others+1, latest.Version, "the stalled commit is not on the chain")
	}
}
