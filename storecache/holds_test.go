package storecache

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/lsm"
)

// holdsOf keeps, per shard, the lowest floor of every holder: consumers need every shard, cuts
// (pinned, whatever their age) only theirs; undecodable holders are an error, never "nothing
// held".
func TestHoldsTakeTheLowestFloorOfEveryHolder(t *testing.T) {
	cutJSON := func(c lsm.Cut) json.RawMessage {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		return b
	}
	cut := lsm.Cut{TableVersion: 7, Generations: map[string]uint64{"a": 9, "b": 4}, Floors: map[string]uint64{"a": 5, "b": 4}}
	// Only a cut: shards it does not read are not held; b is read up to its floor, nothing above.
	h, keep, err := holdsOf(catalog.StoreHolds{Cuts: []json.RawMessage{cutJSON(cut)}})
	require.NoError(t, err)
	require.Equal(t, []uint64{7}, keep)
	require.False(t, h.Consumers)
	require.Equal(t, map[string]uint64{"a": 5, "b": 4}, h.Pinned)

	// A consumer (its cursor names no shard: it needs all from the first) lowers every shard.
	h, _, err = holdsOf(catalog.StoreHolds{Cursors: []string{lsm.FeedCursor{}.String()}, Cuts: []json.RawMessage{cutJSON(cut)}})
	require.NoError(t, err)
	require.True(t, h.Consumers)
	require.Empty(t, h.Floors, "a shard absent is needed from its first generation")
	require.Equal(t, map[string]uint64{"a": 5, "b": 4}, h.Pinned)

	// Nobody: nothing held.
	h, keep, err = holdsOf(catalog.StoreHolds{})
	require.NoError(t, err)
	require.False(t, h.Consumers)
	require.Empty(t, h.Pinned)
	require.Empty(t, keep)

	_, _, err = holdsOf(catalog.StoreHolds{Cursors: []string{"!!"}})
	require.Error(t, err)
	_, _, err = holdsOf(catalog.StoreHolds{Cuts: []json.RawMessage{json.RawMessage(`[`)}})
	require.Error(t, err)
}
