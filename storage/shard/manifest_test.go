package shard

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
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
