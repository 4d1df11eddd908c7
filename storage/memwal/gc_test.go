package memwal

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func TestTheGarbagePlannerNamesOnlyWhatNothingNeeds(t *testing.T) {
	const shard = "s"
	m := &ShardManifest{Version: 10, Epoch: 3, ReplayAfter: 20, SegmentsClosedBelow: 3,
		Generations: []Generation{
			{Gen: 4, KeysPath: generationKeysPath(shard, 4, "a"), FirstEntry: 11, LastEntry: 15},
			{Gen: 5, KeysPath: generationKeysPath(shard, 5, "b"), Path: walDir + shard + "/gens/00000000000000000005-b.arrow"},
		},
		Segments: []SegmentRef{{Name: segmentName(2, 11), First: 11, Last: 15, Length: 100}},
	}
	keep := []string{
		manifestKey(shard, 6), manifestKey(shard, 10), // within keepManifests of the latest
		entryKey(shard, 11), entryKey(shard, 15), // held by generation 4
		entryKey(shard, 21), // above replay_after: replay needs it
		generationKeysPath(shard, 4, "a"), generationKeysPath(shard, 5, "b"), m.Generations[1].Path,
		segmentKey(shard, segmentName(2, 11)), // listed
		segmentKey(shard, segmentName(3, 16)), // the owner's active segment
		segmentKey(shard, segmentName(4, 40)), // a later claimer's
		segmentKey(shard, "not-a-segment"),
		walDir + shard + "/unknown/thing",
	}
	forAnyone := []string{
		manifestKey(shard, 5),                    // more than keepManifests behind
		entryKey(shard, 10), entryKey(shard, 16), // sealed and held by no generation
		segmentKey(shard, segmentName(1, 2)), // unlisted, below segments_closed_below: a fenced writer's
	}
	forOwner := []string{
		generationKeysPath(shard, 6, "lost"), // a seal that lost its race or crashed before committing
		generationKeysPath(shard, 3, "old"),  // a merged generation whose deletion failed
		segmentKey(shard, segmentName(3, 2)), // the owner's epoch, listed once and dropped since
	}
	var listing []objstore.ObjectInfo
	for _, k := range append(append(append([]string{}, keep...), forAnyone...), forOwner...) {
		listing = append(listing, objstore.ObjectInfo{Key: k})
	}
	owner := &gcOwner{epoch: 3, segments: map[string]bool{segmentName(3, 16): true}}
	require.ElementsMatch(t, append(append([]string{}, forAnyone...), forOwner...), planWALGarbage(shard, m, listing, owner))
	require.ElementsMatch(t, forAnyone, planWALGarbage(shard, m, listing, nil),
		"without the owner's knowledge, generation files and own-epoch segments are never garbage")
	require.Empty(t, planWALGarbage(shard, nil, listing, owner), "no manifest: nothing is known to be garbage")
}

// walGarbageLeft is what the shard's owner would still delete: empty once a sweep has run.
func walGarbageLeft(t *testing.T, s *Store) []string {
	t.Helper()
	w := s.residentWriter()
	require.NotNil(t, w)
	keys, err := w.planGarbage(context.Background())
	require.NoError(t, err)
	return keys
}

func generationFiles(t *testing.T, objects objstore.Store, shard string) []string {
	var out []string
	for k := range objectsUnder(t, objects, generationsPrefix(shard)) {
		out = append(out, k)
	}
	return out
}

func referencedGenerationFiles(t *testing.T, objects objstore.Store, shard string) []string {
	m, _, err := latestShardManifest(context.Background(), objects, shard)
	require.NoError(t, err)
	var out []string
	for _, g := range m.Generations {
		out = append(out, g.KeysPath)
	}
	return out
}

func TestASealThatLosesItsManifestCommitLeavesNothingAfterTheNextSweep(t *testing.T) {
	ctx := context.Background()
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	s := e.open("w")
	appendIDs(t, s, e.mem, 1, "a", "b")
	faulty.AddRule(objstoretest.Rule{Times: 1, Err: objstoretest.ErrInjected, Match: func(op objstoretest.Op, key string) bool {
		return op == objstoretest.OpPutIfAbsent && strings.Contains(key, "/manifest/")
	}})
	require.ErrorIs(t, s.Flush(ctx), objstoretest.ErrInjected)
	require.Len(t, generationFiles(t, e.objects, s.Shard()), 1, "the key file was written, its commit failed")
	require.NoError(t, s.Flush(ctx)) // the retry seals with a key file of its own
	require.Len(t, generationFiles(t, e.objects, s.Shard()), 2)
	require.NotEmpty(t, walGarbageLeft(t, s))

	require.NoError(t, s.residentWriter().sweepGarbage(ctx))
	require.Empty(t, walGarbageLeft(t, s))
	require.ElementsMatch(t, referencedGenerationFiles(t, e.objects, s.Shard()), generationFiles(t, e.objects, s.Shard()))
	require.EqualValues(t, 1, value(t, s, "a"))
}

func TestAMergesFailedDeletionsAreSweptByTheOwner(t *testing.T) {
	ctx := context.Background()
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	s := e.open("w", segmentBytes(1))
	for i := range 3 {
		appendIDs(t, s, e.mem, int64(i), ids("k", 10)...)
		require.NoError(t, s.Flush(ctx))
	}
	faulty.AddRule(objstoretest.Rule{Err: objstoretest.ErrInjected, Match: func(op objstoretest.Op, _ string) bool { return op == objstoretest.OpDelete }})
	merger := e.open("maintenance", func(o *Options) { o.ReadOnly = true })
	res, err := merger.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err, "a failed deletion does not fail the merge: the rows are merged")
	require.Equal(t, 3, res.Generations)
	require.Len(t, generationFiles(t, e.objects, s.Shard()), 3, "the merged generations' files are still there")
	faulty.Reset()

	require.NotEmpty(t, walGarbageLeft(t, s))
	require.NoError(t, s.residentWriter().sweepGarbage(ctx))
	require.Empty(t, walGarbageLeft(t, s))
	require.Empty(t, generationFiles(t, e.objects, s.Shard()))
	for _, k := range ids("k", 10) {
		require.EqualValues(t, 2, value(t, merger, k))
	}
}

func TestACrashBetweenKeyFileAndManifestLeavesNothingAfterTheNextClaim(t *testing.T) {
	ctx := context.Background()
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	s := e.open("w")
	acked := ids("k", 20)
	appendIDs(t, s, e.mem, 7, acked...)
	faulty.CrashAfterWrites(1) // the seal's key file, then the process dies before its manifest commit
	require.ErrorIs(t, s.Flush(ctx), objstoretest.ErrCrashed)
	crash(s)
	require.Len(t, generationFiles(t, e.objects, s.Shard()), 1)
	faulty.Reset()

	again := e.open("w") // the restarted process claims the shard, replays and sweeps
	require.Eventually(t, func() bool {
		return len(generationFiles(t, e.objects, s.Shard())) == 0
	}, 5*time.Second, 10*time.Millisecond, "the claim's sweep deletes the orphaned key file")
	require.Empty(t, walGarbageLeft(t, again))
	for _, k := range acked {
		require.EqualValues(t, 7, value(t, again, k))
	}
}
