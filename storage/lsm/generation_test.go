package lsm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
)

// objectsUnder lists the keys under prefix with their sizes.
func objectsUnder(t *testing.T, objects objstore.Store, prefix string) map[string]int64 {
	t.Helper()
	objs, err := objstore.ListAll(context.Background(), objects, prefix)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, o := range objs {
		out[o.Key] = o.Size
	}
	return out
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func TestASealWritesOnlyAKeyFileAndTheEntriesLiveUntilTheMerge(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	owner := e.open("owner", withEntryObjects)
	sh := owner.Shard()
	for i := range 4 { // four WAL entries; later ones overwrite some keys of earlier ones
		appendIDs(t, owner, e.mem, int64(i), ids(fmt.Sprintf("k%d", i%2), 100)...)
	}
	entries := objectsUnder(t, e.objects, shard.EntryPrefix(sh))
	require.Len(t, entries, 5, "the claim's fence and four appends")
	require.NoError(t, owner.Flush(ctx))

	gens := objectsUnder(t, e.objects, shard.WALDir+sh+"/gens/")
	require.Len(t, gens, 1, "one object per generation: its key file")
	for k := range gens {
		require.True(t, strings.HasSuffix(k, ".keys"), k)
	}
	require.Less(t, sum(gens)*5, sum(entries), "the seal writes keys and locations, not the rows again")
	require.Equal(t, entries, objectsUnder(t, e.objects, shard.EntryPrefix(sh)), "the generation's entries stay")
	m, err := shard.ReadManifest(ctx, e.objects, sh)
	require.NoError(t, err)
	require.Len(t, m.Generations, 1)
	g := m.Generations[0]
	require.True(t, g.EntryBacked())
	require.EqualValues(t, 200, g.Rows, "one row per key")
	require.GreaterOrEqual(t, g.Bytes, sum(entries)-entries[shard.EntryKey(sh, 1)],
		"a merge's footprint per copy: at least the entries with rows (the fence has none), and their rows in memory")

	// Another process reads the newest version of every key through the entries.
	reader := e.open("reader", withEntryObjects)
	require.EqualValues(t, 2, value(t, reader, "k00042"))
	require.EqualValues(t, 3, value(t, reader, "k10099"))
	page, err := reader.Scan(ctx, ScanOptions{Limit: 1000, Columns: []string{"value"}})
	require.NoError(t, err)
	require.EqualValues(t, 200, page.Rows.NumRows())
	page.Rows.Release()

	// The merge folds the newest versions and then deletes the key file and the entries.
	res, err := reader.MergeShard(ctx, sh, MergeOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Generations)
	require.EqualValues(t, 2, value(t, reader, "k00042"))
	require.EqualValues(t, 3, value(t, reader, "k10099"))
	checkTable(t, reader)
	require.Eventually(t, func() bool {
		return len(objectsUnder(t, e.objects, shard.WALDir+sh+"/gens/")) == 0 &&
			len(objectsUnder(t, e.objects, shard.EntryPrefix(sh))) == 0
	}, 2*time.Second, 10*time.Millisecond)
}

func TestEntriesNoGenerationHoldsAreDeletedAtTheSeal(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a", withEntryObjects)
	appendIDs(t, a, e.mem, 1, "x")
	require.NoError(t, a.Close(ctx))
	// Reopening claims the shard again: a second fence entry, with no rows. Closing seals a
	// memtable holding only that fence, which makes no generation: the fence is garbage once
	// replay_after covers it.
	again := e.open("a", withEntryObjects)
	require.Len(t, objectsUnder(t, e.objects, shard.EntryPrefix(again.Shard())), 3,
		"the generation's first fence and append, and the new fence")
	require.NoError(t, again.Close(ctx))
	require.Eventually(t, func() bool {
		return len(objectsUnder(t, e.objects, shard.EntryPrefix(again.Shard()))) == 2
	}, 2*time.Second, 10*time.Millisecond, "only the entries the generation holds are left")
	require.EqualValues(t, 1, value(t, e.open("reader"), "x"))
}

// writeFormat1Generation seals rec (sorted by key, one row per key) the way earlier releases
// did: an Arrow IPC file plus a format 1 key file, added to the shard manifest.
func writeFormat1Generation(t *testing.T, s *Store, sh string, rec arrow.RecordBatch) {
	ctx := context.Background()
	var file bytes.Buffer
	fw, err := ipc.NewFileWriter(&file, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(memory.NewGoAllocator()))
	require.NoError(t, err)
	require.NoError(t, fw.Write(rec))
	require.NoError(t, fw.Close())
	stamped := recordKeys(rec, s.keyColumn)
	var keys bytes.Buffer
	put := func(v uint64) { keys.Write(binary.AppendUvarint(nil, v)) }
	put(uint64(len(stamped.Keys)))
	for i, k := range stamped.Keys {
		put(uint64(len(k)))
		keys.WriteString(k)
		put(stamped.Seqs[i])
		keys.WriteByte(0)
	}
	_, _, err = shard.UpdateManifest(ctx, s.objects, sh, func(cur *shard.ShardManifest) (*shard.ShardManifest, error) {
		base := fmt.Sprintf("%s%s/gens/%020d-format1", shard.WALDir, sh, cur.NextGeneration)
		g := shard.Generation{Gen: cur.NextGeneration, Path: base + ".arrow", KeysPath: base + ".keys", Rows: rec.NumRows(),
			Bytes: int64(file.Len()), MinKey: stamped.Keys[0], MaxKey: stamped.Keys[len(stamped.Keys)-1], SealedAt: time.Now()}
		require.NoError(t, s.objects.PutIfAbsent(ctx, g.Path, file.Bytes()))
		require.NoError(t, s.objects.PutIfAbsent(ctx, g.KeysPath, keys.Bytes()))
		cur.Generations = append(cur.Generations, g)
		cur.NextGeneration++
		return cur, nil
	})
	require.NoError(t, err)
}

func TestFormat1GenerationsAreStillReadAndMerged(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	old := e.open("old-release")
	user := rows(e.mem, ids("v", 20), 5)
	stamped, err := old.stamp(user, e.clock.NextN(20), false)
	user.Release()
	require.NoError(t, err)
	writeFormat1Generation(t, old, old.Shard(), stamped)
	stamped.Release()
	appendIDs(t, old, e.mem, 6, "v0003") // a newer version in a format 2 generation
	require.NoError(t, old.Flush(ctx))

	reader := e.open("reader")
	require.EqualValues(t, 5, value(t, reader, "v0007"))
	require.EqualValues(t, 6, value(t, reader, "v0003"))
	page, err := reader.Scan(ctx, ScanOptions{Limit: 100})
	require.NoError(t, err)
	require.EqualValues(t, 20, page.Rows.NumRows())
	page.Rows.Release()

	res, err := reader.MergeShard(ctx, old.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.Equal(t, 2, res.Generations)
	require.EqualValues(t, 5, value(t, reader, "v0019"))
	require.EqualValues(t, 6, value(t, reader, "v0003"))
	checkTable(t, reader)
	require.Eventually(t, func() bool {
		return len(objectsUnder(t, e.objects, shard.WALDir+old.Shard()+"/gens/")) == 0
	}, 2*time.Second, 10*time.Millisecond, "the format 1 file and both key files are deleted")
}

func TestAClaimDeletesEntriesACrashLeftBehind(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a")
	appendIDs(t, a, e.mem, 1, "x")
	require.NoError(t, a.Flush(ctx))
	_, err := a.MergeShard(ctx, a.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(objectsUnder(t, e.objects, shard.EntryPrefix(a.Shard()))) == 0 },
		2*time.Second, 10*time.Millisecond)
	// As if the merge's deletions had never run: its entries are still there.
	require.NoError(t, e.objects.PutIfAbsent(ctx, shard.EntryKey(a.Shard(), 1), []byte("left behind")))
	require.NoError(t, a.Close(ctx))

	again := e.open("a")
	require.Eventually(t, func() bool {
		_, err := e.objects.Get(ctx, shard.EntryKey(again.Shard(), 1))
		return errors.Is(err, objstore.ErrNotFound)
	}, 2*time.Second, 10*time.Millisecond, "below replay_after and held by no generation")
	require.EqualValues(t, 1, value(t, again, "x"))
}

func TestAMergeOfManyEntryObjectsDeletesThemByListing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("w", withEntryObjects)
	for i := range shard.EntryDeletesWithoutListing + 6 { // one entry object per append
		appendIDs(t, s, e.mem, int64(i), fmt.Sprint("k", i))
	}
	require.NoError(t, s.Flush(ctx))
	require.Greater(t, len(objectsUnder(t, e.objects, shard.EntryPrefix(s.Shard()))), shard.EntryDeletesWithoutListing)
	_, err := e.open("merger").MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(objectsUnder(t, e.objects, shard.EntryPrefix(s.Shard()))) == 0 },
		2*time.Second, 10*time.Millisecond, "a range wider than the per-position limit is deleted after a listing")
}
