package lsm

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/predicate"
	"github.com/strata-store/strata/storage/table"
)

// snapshotScanAll streams s's rows (id, value) with opts, returning the keys in order and
// id -> value; a restarted attempt discards what the previous one streamed.
func snapshotScanAll(t *testing.T, s *Store, opts SnapshotScanOptions) ([]string, map[string]int64) {
	t.Helper()
	order, got, _ := snapshotScanCounting(t, s, opts, nil)
	return order, got
}

// snapshotScanCounting is snapshotScanAll that also counts the attempts (calls of begin) and
// runs during(batch number) after each batch.
func snapshotScanCounting(t *testing.T, s *Store, opts SnapshotScanOptions, during func(int)) ([]string, map[string]int64, int) {
	t.Helper()
	opts.Columns = []string{"id", "value"}
	var order []string
	var got map[string]int64
	attempts, batches := 0, 0
	err := s.ScanSnapshot(context.Background(), opts, func(SnapshotScanStart) error {
		attempts++
		order, got = nil, map[string]int64{}
		return nil
	}, func(rec arrow.RecordBatch) error {
		keys := rec.Column(0).(*array.String)
		vals := rec.Column(1).(*array.Int64)
		for i := range keys.Len() {
			order = append(order, keys.Value(i))
			got[keys.Value(i)] = vals.Value(i)
		}
		batches++
		if during != nil {
			during(batches)
		}
		return nil
	})
	require.NoError(t, err)
	return order, got, attempts
}

// The three sources: the base table alone (as of the last merge), the WAL alone (rows not yet
// merged, newest pending version, deletes left out), and both; for page scans and snapshot scans.
func TestSourcesSplitTheStoreIntoBaseAndWAL(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("a")
	ctx := context.Background()
	appendIDs(t, s, e.mem, 1, "a", "b", "c")
	require.NoError(t, s.Flush(ctx))
	_, err := s.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	appendIDs(t, s, e.mem, 2, "b", "d") // b updated, d new: pending in a generation
	require.NoError(t, s.Flush(ctx))
	appendIDs(t, s, e.mem, 3, "e") // in the memtable
	_, err = s.Delete(ctx, []string{"c"})
	require.NoError(t, err)

	want := map[Source]map[string]int64{
		SourceAll:  {"a": 1, "b": 2, "d": 2, "e": 3},
		SourceBase: {"a": 1, "b": 1, "c": 1},
		SourceWAL:  {"b": 2, "d": 2, "e": 3},
	}
	for source, rows := range want {
		_, got := snapshotScanAll(t, s, SnapshotScanOptions{Source: source})
		require.Equal(t, rows, got, "snapshot scan of %v", source)
		page, err := s.Scan(ctx, ScanOptions{Columns: []string{"id", "value"}, Source: source, Limit: 2})
		require.NoError(t, err)
		keys := page.Rows.Column(0).(*array.String)
		require.Equal(t, 2, keys.Len(), "%v", source)
		for i := range keys.Len() {
			require.Equal(t, rows[keys.Value(i)], page.Rows.Column(1).(*array.Int64).Value(i), "%v", source)
		}
		page.Rows.Release()
	}
	for _, name := range []string{"", "all", "base", "fragments", "wal"} {
		_, err := ParseSource(name)
		require.NoError(t, err, name)
	}
	_, err = ParseSource("both")
	require.ErrorIs(t, err, table.ErrSchema)
	_, err = s.Scan(ctx, ScanOptions{Source: SourceWAL, Version: 1})
	require.ErrorIs(t, err, table.ErrSchema, "a checkout has no WAL")
}

// A snapshot scan reads one moment: a merge and new appends landing while it streams change
// nothing of what it returns; a merge that removes a generation it still has to read starts it
// again (begin is called again) on a fresh snapshot.
func TestSnapshotScanIsOneMoment(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	w := e.open("w")
	reader := e.open("reader")
	ctx := context.Background()
	first := ids("a", 3*snapshotScanChunk)
	appendIDs(t, w, e.mem, 1, first...)
	require.NoError(t, w.Flush(ctx))
	_, err := reader.MergeShard(ctx, w.Shard(), MergeOptions{})
	require.NoError(t, err)
	late := ids("z", 10)
	appendIDs(t, w, e.mem, 2, late...) // pending, read from the generation at the end of the scan
	require.NoError(t, w.Flush(ctx))

	// Appends during the scan (after its first batch) are not in it.
	order, got, attempts := snapshotScanCounting(t, reader, SnapshotScanOptions{}, func(batch int) {
		if batch == 1 {
			appendIDs(t, w, e.mem, 3, "b-during")
			require.NoError(t, w.Flush(ctx))
		}
	})
	require.Equal(t, 1, attempts)
	require.Len(t, order, len(first)+len(late))
	require.NotContains(t, got, "b-during")
	require.Equal(t, int64(2), got[late[0]])

	// A merge during the scan may remove objects of the generation it has not read yet: then it
	// starts again on a fresh snapshot (when the generation's rows are in WAL entries, which the
	// merge leaves to the WAL's collection, it reads them where they are). Either way it answers
	// one moment.
	appendIDs(t, w, e.mem, 4, late...)
	require.NoError(t, w.Flush(ctx))
	_, got, attempts = snapshotScanCounting(t, reader, SnapshotScanOptions{}, func(batch int) {
		if batch == 1 {
			_, err := w.MergeShard(ctx, w.Shard(), MergeOptions{})
			require.NoError(t, err)
		}
	})
	require.LessOrEqual(t, attempts, 2)
	require.Len(t, got, len(first)+len(late)+1)
	require.Equal(t, int64(4), got[late[0]])

	// A predicate filters the stream; an error from emit stops it.
	where, err := predicate.Parse("value = 4", userSchema)
	require.NoError(t, err)
	_, got = snapshotScanAll(t, reader, SnapshotScanOptions{Where: where})
	require.Len(t, got, len(late))
	stop := context.Canceled
	err = reader.ScanSnapshot(ctx, SnapshotScanOptions{}, func(SnapshotScanStart) error { return nil },
		func(arrow.RecordBatch) error { return stop })
	require.ErrorIs(t, err, stop)
}
