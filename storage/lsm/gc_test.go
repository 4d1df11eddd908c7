package lsm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
)

// walGarbageLeft is what the shard's owner would still delete: empty once a sweep has run.
func walGarbageLeft(t *testing.T, s *Store) []string {
	t.Helper()
	w := s.residentWriter()
	require.NotNil(t, w)
	keys, err := w.PlanGarbage(context.Background())
	require.NoError(t, err)
	return keys
}

func generationFiles(t *testing.T, objects objstore.Store, sh string) []string {
	var out []string
	for k := range objectsUnder(t, objects, shard.GenerationsPrefix(sh)) {
		out = append(out, k)
	}
	return out
}

func referencedGenerationFiles(t *testing.T, objects objstore.Store, sh string) []string {
	m, err := shard.ReadManifest(context.Background(), objects, sh)
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

	require.NoError(t, s.residentWriter().SweepGarbage(ctx))
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
	require.NoError(t, s.residentWriter().SweepGarbage(ctx))
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
