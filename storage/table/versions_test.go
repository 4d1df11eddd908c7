package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func TestOldVersionsStayReadableAsCheckouts(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	upsertRows(t, tbl, mem, []row{{id: "a", value: 1, seq: 1}})
	upsertRows(t, tbl, mem, []row{{id: "a", value: 2, seq: 2}, {id: "b", value: 2, seq: 2}})
	v2, err := tbl.Version(ctx, 2)
	require.NoError(t, err)
	rows := scanAll(t, tbl, v2)
	require.Len(t, rows, 1)
	require.EqualValues(t, 1, rows["a"].value)
	_, err = tbl.Version(ctx, 99)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestOpenFindsTheLatestVersionWithAStaleOrMissingHint(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	_, err := Open(ctx, store, Options{})
	require.ErrorIs(t, err, ErrNotFound)
	tbl := newTestTable(t, store, mem)
	for i := range 5 {
		upsertRows(t, tbl, mem, []row{{id: "a", value: int64(i), seq: uint64(i + 1)}})
	}
	require.NoError(t, store.Put(ctx, latestHint, []byte("2")))
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, m.Version)
	require.NoError(t, store.Delete(ctx, latestHint))
	m, err = tbl.Latest(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, m.Version)
	require.NoError(t, store.Put(ctx, latestHint, []byte("garbage")))
	reopened, err := Open(ctx, store, Options{Allocator: mem})
	require.NoError(t, err)
	m, err = reopened.Latest(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, m.Version)
}

func TestLatestStartsFromTheVersionSeenLast(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl := newTestTable(t, counting, mem)
	reader, err := Open(ctx, counting, Options{Allocator: mem})
	require.NoError(t, err)
	latest := func() uint64 {
		t.Helper()
		m, err := reader.Latest(ctx)
		require.NoError(t, err)
		return m.Version
	}
	require.EqualValues(t, 1, latest())
	before := counting.Stats()
	require.EqualValues(t, 1, latest())
	io := counting.Stats().Sub(before)
	require.EqualValues(t, 2, io.Reads, "unchanged: two stats (the version seen last, the next one)")
	require.EqualValues(t, 0, io.ReadBytes, "no read of the hint or the manifest")

	for i := range 3 { // another handle commits: the reader walks up from what it saw
		upsertRows(t, tbl, mem, []row{{id: "a", value: int64(i), seq: uint64(i + 1)}})
	}
	require.EqualValues(t, 4, latest())
	for i := range 20 { // far ahead: after a few steps the hint is read after all
		upsertRows(t, tbl, mem, []row{{id: "b", value: int64(i), seq: uint64(i + 10)}})
	}
	before = counting.Stats()
	require.EqualValues(t, 24, latest())
	require.LessOrEqual(t, counting.Stats().Sub(before).Reads, int64(13),
		"eight probes, then the hint (read and checked), one probe and the manifest: not 21 probes")

	// The table is purged and created again: the version seen last is gone.
	objs, err := objstore.ListAll(ctx, counting, "")
	require.NoError(t, err)
	for _, o := range objs {
		require.NoError(t, counting.Delete(ctx, o.Key))
	}
	again := newTestTable(t, counting, mem)
	upsertRows(t, again, mem, []row{{id: "c", value: 1, seq: 1}})
	require.EqualValues(t, 2, latest())
}

func TestCreateIsIdempotentAndRejectsBadSchemas(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	newTestTable(t, store, mem)
	_, err := Create(ctx, store, testSchema, "id", Options{Allocator: mem})
	require.NoError(t, err)
	_, err = Create(ctx, store, testSchema, "payload", Options{Allocator: mem})
	require.Error(t, err)

	for _, bad := range []string{"value", "missing"} {
		_, err := Create(ctx, objstoretest.NewMemory(), testSchema, bad, Options{})
		require.ErrorIs(t, err, ErrSchema, bad)
	}
}

func TestCleanupDeletesOldVersionsAndUnreferencedFilesOnly(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	clock := time.Now()
	tbl, err := Create(ctx, store, testSchema, "id", Options{Allocator: mem, Now: func() time.Time { return clock }})
	require.NoError(t, err)
	for i := range 8 {
		upsertRows(t, tbl, mem, []row{{id: fmt.Sprintf("k%d", i%3), value: int64(i), seq: uint64(i + 1)}})
	}
	_, err = tbl.Compact(ctx, CompactionConfig{MinFragments: 2})
	require.NoError(t, err)
	latest, err := tbl.Latest(ctx)
	require.NoError(t, err)
	want := scanAll(t, tbl, latest)

	// An orphan a crashed writer left behind, still young.
	require.NoError(t, store.Put(ctx, "data/orphan.parquet", []byte("x")))

	// Nothing is old yet: cleanup removes nothing.
	res, err := tbl.CleanupVersions(ctx, CleanupOptions{KeepLatest: 2, OlderThan: time.Hour, Grace: time.Hour})
	require.NoError(t, err)
	require.Zero(t, res.VersionsDeleted)
	require.Zero(t, res.FilesDeleted)

	// Two hours later (backdate every object), everything but the latest two versions goes, and
	// then every file they do not reference, the orphan included.
	objs, _ := objstore.ListAll(ctx, store, "")
	for _, o := range objs {
		store.SetModTime(o.Key, clock.Add(-2*time.Hour))
	}
	res, err = tbl.CleanupVersions(ctx, CleanupOptions{KeepLatest: 2, OlderThan: time.Hour, Grace: time.Hour})
	require.NoError(t, err)
	require.Equal(t, int(latest.Version)-2, res.VersionsDeleted)
	_, err = store.Stat(ctx, "data/orphan.parquet")
	require.ErrorIs(t, err, objstore.ErrNotFound)
	prev, err := tbl.Version(ctx, latest.Version-1)
	require.NoError(t, err)
	require.NoError(t, tbl.Check(ctx, prev), "a retained version keeps its files")

	// The compaction dropped every fragment the upserts wrote: the manifests count their bytes.
	require.Positive(t, prev.Bytes())
	require.GreaterOrEqual(t, latest.Counters.DroppedBytes, uint64(prev.Bytes()), "the compaction's dropped fragments are counted")
	require.Less(t, res.RetainedDroppedBytes, latest.Counters.DroppedBytes, "the kept previous version predates the compaction's drop")

	// Keeping only the latest version frees the fragments the compaction replaced.
	res, err = tbl.CleanupVersions(ctx, CleanupOptions{KeepLatest: 1, OlderThan: time.Hour, Grace: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, res.VersionsDeleted)
	require.GreaterOrEqual(t, res.FilesDeleted, 8)
	require.Equal(t, latest.Counters.DroppedBytes, res.RetainedDroppedBytes, "nothing dropped is left: the garbage estimate is 0")
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, latest.Version, m.Version)
	require.Equal(t, want, scanAll(t, tbl, m))
	require.NoError(t, tbl.Check(ctx, m))
	left, _ := objstore.ListAll(ctx, store, dataDir)
	require.Len(t, left, len(m.Fragments))

	// Writes go on after cleanup.
	upsertRows(t, tbl, mem, []row{{id: "new", value: 1, seq: 100}})
}

func TestCleanupCanBeAbandonedAndResumed(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	mstore := objstoretest.NewMemory()
	faulty := objstoretest.NewFaulty(mstore)
	tbl := newTestTable(t, faulty, mem)
	for i := range 6 {
		upsertRows(t, tbl, mem, []row{{id: "k", value: int64(i), seq: uint64(i + 1)}})
	}
	objs, _ := objstore.ListAll(ctx, mstore, "")
	for _, o := range objs {
		mstore.SetModTime(o.Key, time.Now().Add(-3*time.Hour))
	}
	// The third delete hangs until the pass's deadline.
	calls := 0
	faulty.AddRule(objstoretest.Rule{Match: func(op objstoretest.Op, key string) bool {
		if op != objstoretest.OpDelete {
			return false
		}
		calls++
		return calls == 3
	}, Hang: true})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := tbl.CleanupVersions(short, CleanupOptions{KeepLatest: 1})
	cancel()
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)

	res, err := tbl.CleanupVersions(ctx, CleanupOptions{KeepLatest: 1})
	require.NoError(t, err)
	require.Positive(t, res.VersionsDeleted+res.FilesDeleted)
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.NoError(t, tbl.Check(ctx, m))
	left, _ := objstore.ListAll(ctx, mstore, versionsDir)
	require.Len(t, left, 1)
	require.True(t, strings.HasSuffix(left[0].Key, fmt.Sprintf("%020d.json", m.Version)))
}
