package lsm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/table"
)

// Stats reports the table as its manifest says and each shard's pending generations; TableStats
// is its table part alone, from one manifest read.
func TestStatsReportTheTableAndEveryShard(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	s, other := e.open("a"), e.open("b")
	appendIDs(t, s, e.mem, 1, "a1", "a2")
	require.NoError(t, s.Flush(ctx))
	_, err := s.MergeShard(ctx, s.Shard(), MergeOptions{MaxGenerations: -1, MaxBytes: -1})
	require.NoError(t, err)
	appendIDs(t, other, e.mem, 1, "b1")
	require.NoError(t, other.Flush(ctx))

	st, err := s.Stats(ctx, table.CompactionConfig{})
	require.NoError(t, err)
	m, err := s.TableManifest(ctx)
	require.NoError(t, err)
	require.Equal(t, m.Version, st.TableVersion)
	require.EqualValues(t, 2, st.Rows)
	require.Equal(t, 1, st.Fragments)
	require.EqualValues(t, 1, st.Merges)
	require.NotNil(t, st.LastMergeAt)
	pending := map[string]int{}
	for _, sh := range st.Shards {
		pending[sh.Shard] = sh.PendingGenerations
	}
	require.Equal(t, 1, pending[other.Shard()], "the other writer's sealed generation waits")
	require.Zero(t, pending[s.Shard()], "merged")

	tbl, err := s.TableStats(ctx)
	require.NoError(t, err)
	require.Nil(t, tbl.Shards)
	st.Shards, st.CompactableFragments = nil, 0
	require.Equal(t, st, tbl)
	v, err := s.LatestTableVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, m.Version, v)
}
