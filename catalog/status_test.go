package catalog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
)

func TestListStoreStatusJoinsStatsAndPages(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	for _, n := range []string{"a1", "a2", "b1", "gone"} {
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, n))
		require.NoError(t, err)
	}
	_, _, err := c.CreateStore(ctx, def(catalog.KindGeneric, "a3"))
	require.NoError(t, err)
	_, err = c.SoftDeleteStore(ctx, catalog.KindRollout, "gone")
	require.NoError(t, err)
	require.NoError(t, c.UpsertShardStats(ctx, []catalog.ShardStats{{Kind: catalog.KindRollout, Name: "a2", Shard: "s", PendingGenerations: 7}}))
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{{Kind: catalog.KindRollout, Name: "a2", Fragments: 3}}))

	all, err := c.ListStoreStatus(ctx, "", catalog.ListOptions{})
	require.NoError(t, err)
	var got []string
	for _, s := range all {
		got = append(got, string(s.Kind)+"/"+s.Name)
	}
	require.Equal(t, []string{"generic/a3", "rollout/a1", "rollout/a2", "rollout/b1"}, got, "deleted stores are left out")
	require.Nil(t, all[1].Stats, "a store never observed has no stats")
	require.NotNil(t, all[2].Stats)
	require.Equal(t, 7, all[2].Stats.PendingGenerations)
	require.Equal(t, 3, all[2].Stats.Fragments)

	page, err := c.ListStoreStatus(ctx, catalog.KindRollout, catalog.ListOptions{Prefix: "a", Limit: 1})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "a1", page[0].Name)
	page, err = c.ListStoreStatus(ctx, catalog.KindRollout, catalog.ListOptions{Prefix: "a", After: "rollout/a1"})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "a2", page[0].Name)
}
