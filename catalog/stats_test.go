package catalog_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
)

func names(stats []catalog.StoreStats) []string {
	out := make([]string, len(stats))
	for i, s := range stats {
		out[i] = s.Name
	}
	return out
}

func TestShardStatsRollUpIntoStoreStats(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	old := now.Add(-time.Hour)
	_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, "s"))
	require.NoError(t, err)

	require.NoError(t, c.UpsertShardStats(ctx, []catalog.ShardStats{
		{Kind: catalog.KindRollout, Name: "s", Shard: "a", PendingGenerations: 3, PendingRows: 30, PendingBytes: 300, OldestPendingAt: &now, UpdatedAt: now},
		{Kind: catalog.KindRollout, Name: "s", Shard: "b", PendingGenerations: 5, PendingRows: 50, PendingBytes: 500, OldestPendingAt: &old, UpdatedAt: now},
		{Kind: catalog.KindRollout, Name: "s", Shard: "c", UpdatedAt: now},
	}))
	st, err := c.GetStoreStats(ctx, catalog.KindRollout, "s")
	require.NoError(t, err)
	require.Equal(t, 8, st.PendingGenerations)
	require.NotNil(t, st.OldestPendingAt)
	require.True(t, st.OldestPendingAt.Equal(old))

	// Shard b drains; a stale observation of shard a (older than the stored one) is ignored.
	later := now.Add(time.Second)
	require.NoError(t, c.UpsertShardStats(ctx, []catalog.ShardStats{
		{Kind: catalog.KindRollout, Name: "s", Shard: "b", UpdatedAt: later},
		{Kind: catalog.KindRollout, Name: "s", Shard: "a", PendingGenerations: 99, UpdatedAt: now.Add(-time.Minute)},
	}))
	st, err = c.GetStoreStats(ctx, catalog.KindRollout, "s")
	require.NoError(t, err)
	require.Equal(t, 3, st.PendingGenerations)
	require.True(t, st.OldestPendingAt.Equal(now))

	shards, err := c.ListShardStats(ctx, catalog.KindRollout, "s")
	require.NoError(t, err)
	require.Len(t, shards, 3)
	require.Equal(t, 3, shards[0].PendingGenerations, "stale write ignored")

	// Quiet shards with nothing pending are removable; the roll-up is unaffected.
	n, err := c.DeleteQuietShardStats(ctx, later.Add(time.Second), 100)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	shards, err = c.ListShardStats(ctx, catalog.KindRollout, "s")
	require.NoError(t, err)
	require.Len(t, shards, 1)
	require.Equal(t, "a", shards[0].Shard)
}

func TestConcurrentShardUpsertsKeepTheRollUpExact(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	const writers, rounds = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 1; r <= rounds; r++ {
				// Each writer owns one shard in each of two stores, listed in opposite orders.
				batch := []catalog.ShardStats{
					{Kind: catalog.KindGeneric, Name: "x", Shard: string(rune('a' + w)), PendingGenerations: r},
					{Kind: catalog.KindGeneric, Name: "y", Shard: string(rune('a' + w)), PendingGenerations: 2 * r},
				}
				if w%2 == 1 {
					batch[0], batch[1] = batch[1], batch[0]
				}
				if err := c.UpsertShardStats(ctx, batch); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	x, err := c.GetStoreStats(ctx, catalog.KindGeneric, "x")
	require.NoError(t, err)
	require.Equal(t, writers*rounds, x.PendingGenerations)
	y, err := c.GetStoreStats(ctx, catalog.KindGeneric, "y")
	require.NoError(t, err)
	require.Equal(t, 2*writers*rounds, y.PendingGenerations)
}

func TestStoreStatsUpsertKeepsTimestampsAndIgnoresStaleObservations(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	merged := t0.Add(-time.Minute)
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{{
		Kind: catalog.KindRollout, Name: "s", TableVersion: 7, BaseRows: 100, Fragments: 4, IndexCoveredFragments: 3,
		LastMergeAt: &merged, MergesTotal: 2, UpdatedAt: t0,
	}}))
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{{
		Kind: catalog.KindRollout, Name: "s", TableVersion: 8, BaseRows: 120, Fragments: 5, IndexCoveredFragments: 5,
		MergesTotal: 3, UpdatedAt: t0.Add(time.Second),
	}}))
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{{
		Kind: catalog.KindRollout, Name: "s", TableVersion: 6, UpdatedAt: t0.Add(-time.Second),
	}}))
	st, err := c.GetStoreStats(ctx, catalog.KindRollout, "s")
	require.NoError(t, err)
	require.EqualValues(t, 8, st.TableVersion)
	require.EqualValues(t, 120, st.BaseRows)
	require.Equal(t, 5, st.IndexCoveredFragments)
	require.EqualValues(t, 3, st.MergesTotal)
	require.NotNil(t, st.LastMergeAt, "a nil timestamp keeps the stored one")
	require.True(t, st.LastMergeAt.Equal(merged))

	_, err = c.GetStoreStats(ctx, catalog.KindRollout, "missing")
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

func TestCandidateQueriesRankAndSkipDeletedStores(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	now := time.Now()
	for _, n := range []string{"hot", "warm", "cold", "gone", "fragmented", "unindexed", "healthy-large"} {
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, n))
		require.NoError(t, err)
	}
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	require.NoError(t, c.UpsertShardStats(ctx, []catalog.ShardStats{
		{Kind: catalog.KindRollout, Name: "hot", Shard: "1", PendingGenerations: 40, OldestPendingAt: ago(time.Minute)},
		{Kind: catalog.KindRollout, Name: "hot", Shard: "2", PendingGenerations: 20, OldestPendingAt: ago(time.Minute)},
		{Kind: catalog.KindRollout, Name: "warm", Shard: "1", PendingGenerations: 9, OldestPendingAt: ago(2 * time.Minute)},
		{Kind: catalog.KindRollout, Name: "cold", Shard: "1", PendingGenerations: 1, OldestPendingAt: ago(3 * time.Hour)},
		{Kind: catalog.KindRollout, Name: "gone", Shard: "1", PendingGenerations: 500, OldestPendingAt: ago(9 * time.Hour)},
	}))
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{
		{Kind: catalog.KindRollout, Name: "fragmented", Fragments: 40, IndexCoveredFragments: 40, CompactableFragments: 30},
		{Kind: catalog.KindRollout, Name: "unindexed", Fragments: 20, IndexCoveredFragments: 2, CompactableFragments: 5},
		{Kind: catalog.KindRollout, Name: "gone", Fragments: 900, IndexCoveredFragments: 0, CompactableFragments: 900},
		{Kind: catalog.KindRollout, Name: "warm", Fragments: 3, IndexCoveredFragments: 2},
		// Many full fragments, nothing a compaction would rewrite: never a candidate.
		{Kind: catalog.KindRollout, Name: "healthy-large", Fragments: 500, IndexCoveredFragments: 500},
	}))
	_, err := c.SoftDeleteStore(ctx, catalog.KindRollout, "gone")
	require.NoError(t, err)

	merge, err := c.MergeCandidates(ctx, 8, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"hot", "warm"}, names(merge))
	require.Equal(t, 60, merge[0].PendingGenerations)
	merge, err = c.MergeCandidates(ctx, 8, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"hot"}, names(merge), "limit keeps the hottest")

	stale, err := c.StaleMergeCandidates(ctx, now.Add(-time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"cold"}, names(stale))

	compact, err := c.CompactCandidates(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"fragmented", "unindexed"}, names(compact), "by what a plan would rewrite; empty plans never")

	index, err := c.IndexCandidates(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"unindexed", "warm"}, names(index))
}

func TestStaleStatsCandidates(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	for _, n := range []string{"fresh", "stale", "never", "deleted"} {
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, n))
		require.NoError(t, err)
	}
	now := time.Now()
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{
		{Kind: catalog.KindRollout, Name: "fresh", UpdatedAt: now},
		{Kind: catalog.KindRollout, Name: "stale", UpdatedAt: now.Add(-time.Hour)},
		{Kind: catalog.KindRollout, Name: "deleted", UpdatedAt: now.Add(-time.Hour)},
	}))
	_, err := c.SoftDeleteStore(ctx, catalog.KindRollout, "deleted")
	require.NoError(t, err)
	got, err := c.StaleStatsCandidates(ctx, now.Add(-time.Minute), 10)
	require.NoError(t, err)
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"never", "stale"}, names)
}

// A deleted store's stats go with it: a store created again under its name inherits no pending
// generations, fragments or compaction plan.
func TestARecreatedStoreInheritsNoStats(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, "again"))
	require.NoError(t, err)
	require.NoError(t, c.UpsertShardStats(ctx, []catalog.ShardStats{{Kind: catalog.KindRollout, Name: "again", Shard: "s", PendingGenerations: 40}}))
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{{Kind: catalog.KindRollout, Name: "again", Fragments: 30, CompactableFragments: 20}}))
	_, err = c.SoftDeleteStore(ctx, catalog.KindRollout, "again")
	require.NoError(t, err)
	_, err = c.GetStoreStats(ctx, catalog.KindRollout, "again")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	shards, err := c.ListShardStats(ctx, catalog.KindRollout, "again")
	require.NoError(t, err)
	require.Empty(t, shards)

	d := def(catalog.KindRollout, "again")
	d.URI += "-2"
	_, created, err := c.CreateStore(ctx, d)
	require.NoError(t, err)
	require.True(t, created)
	merge, err := c.MergeCandidates(ctx, 1, 10)
	require.NoError(t, err)
	require.Empty(t, merge)
	compact, err := c.CompactCandidates(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, compact)
}

// A store is a cleanup candidate once its table moved minVersions past the version its last
// cleanup saw; recording a cleanup resets that, and never moves back.
func TestCleanupCandidatesFollowTheLastCleanup(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	for _, n := range []string{"busy", "quiet"} {
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, n))
		require.NoError(t, err)
	}
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{
		{Kind: catalog.KindRollout, Name: "busy", TableVersion: 200},
		{Kind: catalog.KindRollout, Name: "quiet", TableVersion: 10},
	}))
	got, err := c.CleanupCandidates(ctx, catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 1 << 40}, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"busy"}, names(got))
	require.NoError(t, c.RecordCleanup(ctx, catalog.KindRollout, "busy", 190, 0))
	require.NoError(t, c.RecordCleanup(ctx, catalog.KindRollout, "busy", 100, 0), "an older cleanup's record is ignored")
	got, err = c.CleanupCandidates(ctx, catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 1 << 40}, 10)
	require.NoError(t, err)
	require.Empty(t, got)
	st, err := c.GetStoreStats(ctx, catalog.KindRollout, "busy")
	require.NoError(t, err)
	require.EqualValues(t, 190, st.CleanedVersion)
	require.NotNil(t, st.LastCleanupAt)
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{{Kind: catalog.KindRollout, Name: "busy", TableVersion: 260}}))
	got, err = c.CleanupCandidates(ctx, catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 1 << 40}, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"busy"}, names(got), "a stats refresh keeps the cleanup record")
}

// A store holding garbage past the threshold (bytes its table dropped since what its last
// cleanup removed) is a cleanup candidate however few versions it moved, most garbage first.
func TestCleanupCandidatesFollowGarbageBytes(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	for _, n := range []string{"big", "small", "versions"} {
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, n))
		require.NoError(t, err)
	}
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{
		{Kind: catalog.KindRollout, Name: "big", TableVersion: 5, DroppedBytes: 900 << 20},
		{Kind: catalog.KindRollout, Name: "small", TableVersion: 5, DroppedBytes: 10 << 20},
		{Kind: catalog.KindRollout, Name: "versions", TableVersion: 100},
	}))
	got, err := c.CleanupCandidates(ctx, catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 64 << 20}, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"big", "versions"}, names(got))
	got, err = c.CleanupCandidates(ctx, catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 64 << 20, VolumeInterval: time.Hour}, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"big", "versions"}, names(got), "never cleaned: no interval to wait")
	require.NoError(t, c.RecordCleanup(ctx, catalog.KindRollout, "big", 5, 880<<20))
	st, err := c.GetStoreStats(ctx, catalog.KindRollout, "big")
	require.NoError(t, err)
	require.EqualValues(t, 20<<20, st.GarbageBytes(), "what the cleanup left")
	got, err = c.CleanupCandidates(ctx, catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 1 << 20, VolumeInterval: time.Hour}, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"small", "versions"}, names(got), "big's 20 MiB wait out the interval after its cleanup")
	// The 20 MiB the cleanup had to keep (too young then) count by ratio (big's table holds
	// 10 MiB) once a TTL has passed since; "small" (never cleaned, 10 MiB of garbage for 1 MiB of
	// data) at once.
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{
		{Kind: catalog.KindRollout, Name: "big", TableVersion: 5, DroppedBytes: 900 << 20, Bytes: 10 << 20},
		{Kind: catalog.KindRollout, Name: "small", TableVersion: 5, DroppedBytes: 10 << 20, Bytes: 1 << 20},
	}))
	ratio := catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 64 << 20, GarbageRatio: 1, RatioInterval: time.Hour}
	got, err = c.CleanupCandidates(ctx, ratio, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"versions", "small"}, names(got), "big was cleaned a moment ago: not yet")
	ratio.RatioInterval = -time.Minute // as if the TTL had passed
	got, err = c.CleanupCandidates(ctx, ratio, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"versions", "big", "small"}, names(got))

}
