package shard

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
)

func TestTheGarbagePlannerNamesOnlyWhatNothingNeeds(t *testing.T) {
	const shard = "s"
	m := &ShardManifest{Version: 10, Epoch: 3, ReplayAfter: 20, SegmentsClosedBelow: 3,
		Generations: []Generation{
			{Gen: 4, KeysPath: GenerationKeysPath(shard, 4, "a"), FirstEntry: 11, LastEntry: 15},
			{Gen: 5, KeysPath: GenerationKeysPath(shard, 5, "b"), Path: WALDir + shard + "/gens/00000000000000000005-b.arrow"},
		},
		Segments: []SegmentRef{{Name: SegmentName(2, 11), First: 11, Last: 15, Length: 100}},
	}
	keep := []string{
		ManifestKey(shard, 6), ManifestKey(shard, 10), // within keepManifests of the latest
		EntryKey(shard, 11), EntryKey(shard, 15), // held by generation 4
		EntryKey(shard, 21), // above replay_after: replay needs it
		GenerationKeysPath(shard, 4, "a"), GenerationKeysPath(shard, 5, "b"), m.Generations[1].Path,
		SegmentKey(shard, SegmentName(2, 11)), // listed
		SegmentKey(shard, SegmentName(3, 16)), // the owner's active segment
		SegmentKey(shard, SegmentName(4, 40)), // a later claimer's
		SegmentKey(shard, "not-a-segment"),
		WALDir + shard + "/unknown/thing",
	}
	forAnyone := []string{
		ManifestKey(shard, 5),                    // more than keepManifests behind
		EntryKey(shard, 10), EntryKey(shard, 16), // sealed and held by no generation
		SegmentKey(shard, SegmentName(1, 2)), // unlisted, below segments_closed_below: a fenced writer's
	}
	forOwner := []string{
		GenerationKeysPath(shard, 6, "lost"), // a seal that lost its race or crashed before committing
		GenerationKeysPath(shard, 3, "old"),  // a merged generation whose deletion failed
		SegmentKey(shard, SegmentName(3, 2)), // the owner's epoch, listed once and dropped since
	}
	var listing []objstore.ObjectInfo
	for _, k := range append(append(append([]string{}, keep...), forAnyone...), forOwner...) {
		listing = append(listing, objstore.ObjectInfo{Key: k})
	}
	owner := &gcOwner{epoch: 3, segments: map[string]bool{SegmentName(3, 16): true}}
	require.ElementsMatch(t, append(append([]string{}, forAnyone...), forOwner...), planWALGarbage(shard, m, listing, owner))
	require.ElementsMatch(t, forAnyone, planWALGarbage(shard, m, listing, nil),
		"without the owner's knowledge, generation files and own-epoch segments are never garbage")
	require.Empty(t, planWALGarbage(shard, nil, listing, owner), "no manifest: nothing is known to be garbage")
}
