package lsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
)

func TestReadYourWritesHereVisibleElsewhereAfterSeal(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	a, b := e.open("worker-a"), e.open("worker-b")
	appendIDs(t, a, e.mem, 7, "x", "y")
	require.EqualValues(t, 7, value(t, a, "x"), "read-your-writes on the appending worker")
	require.EqualValues(t, -1, value(t, b, "x"), "not visible to another worker before the seal")
	require.NoError(t, a.Flush(context.Background()))
	require.EqualValues(t, 7, value(t, b, "x"))
	require.EqualValues(t, 7, value(t, b, "y"))
	require.EqualValues(t, -1, value(t, b, "z"))
}

func TestDeleteWritesATombstone(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a")
	appendIDs(t, a, e.mem, 1, "x")
	require.NoError(t, a.Flush(context.Background()))
	_, err := a.Delete(context.Background(), []string{"x"})
	require.NoError(t, err)
	require.EqualValues(t, -1, value(t, a, "x"))
	require.NoError(t, a.Flush(context.Background()))
	_, err = a.MergeShard(context.Background(), a.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.EqualValues(t, -1, value(t, e.open("b"), "x"), "the delete survives the merge")
}

func TestReplayAfterACrashRestoresUnsealedRows(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a")
	appendIDs(t, a, e.mem, 1, ids("k", 50)...)
	require.NoError(t, a.Flush(context.Background()))
	appendIDs(t, a, e.mem, 2, ids("k", 10)...) // durable, unsealed
	crash(a)

	reader := e.open("reader")
	require.EqualValues(t, 1, value(t, reader, "k0003"), "unsealed rows are not visible elsewhere yet")
	again := e.open("a") // the restarted process claims its shard and replays the WAL
	require.EqualValues(t, 2, value(t, again, "k0003"))
	require.EqualValues(t, 1, value(t, again, "k0030"))
	require.NoError(t, again.Flush(context.Background()))
	require.EqualValues(t, 2, value(t, reader, "k0003"))
	require.EqualValues(t, 2, value(t, reader, "k0009"))
	require.EqualValues(t, 1, value(t, reader, "k0010"))
}

// crash abandons s's writer as a dying process would: nothing is sealed, memory is gone.
func crash(s *Store) {
	s.mu.Lock()
	w := s.writer
	s.writer, s.closed = nil, true
	s.mu.Unlock()
	w.Abandon()
}

func TestFencingKeepsEverythingAcknowledged(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	old := e.open("same-id")
	appendIDs(t, old, e.mem, 1, ids("old", 20)...)
	// A second process with the same instance id claims the shard.
	newer := e.open("same-id")
	appendIDs(t, newer, e.mem, 2, "fresh")
	rec := rows(e.mem, []string{"late"}, 3)
	_, err := old.Append(context.Background(), rec)
	rec.Release()
	require.ErrorIs(t, err, ErrFenced)
	require.ErrorIs(t, old.Flush(context.Background()), ErrFenced)

	require.NoError(t, newer.Flush(context.Background()))
	reader := e.open("reader")
	for _, id := range ids("old", 20) {
		require.EqualValues(t, 1, value(t, reader, id), "acknowledged by the fenced writer: %s", id)
	}
	require.EqualValues(t, 2, value(t, reader, "fresh"))
	require.EqualValues(t, -1, value(t, reader, "late"))
}

func TestConcurrentAppendsShareGroupCommits(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a", func(o *Options) { o.Writer.GroupCommitWindow = 5 * time.Millisecond })
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				appendIDs(t, a, e.mem, int64(w*100+i), ids(string(rune('a'+w)), i+1)[i])
			}
		}()
	}
	wg.Wait()
	require.Less(t, len(walPayloads(t, e.objects, a.Shard())), 160, "160 appends must share WAL entries")
	require.NoError(t, a.Flush(context.Background()))
	for w := range 16 {
		for i := range 10 {
			require.EqualValues(t, w*100+i, value(t, e.open("r"), ids(string(rune('a'+w)), i+1)[i]))
		}
	}
}

func TestOverloadGuardRails(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a", func(o *Options) { o.AppendMaxGenerations = 3; o.ReadMaxGenerations = 2 })
	for i := range 3 {
		appendIDs(t, a, e.mem, int64(i), "k")
		require.NoError(t, a.Flush(context.Background()))
	}
	rec := rows(e.mem, []string{"k"}, 9)
	_, err := a.Append(context.Background(), rec)
	rec.Release()
	require.ErrorIs(t, err, ErrOverloaded, "appends are refused past the pending limit")
	_, err = a.Get(context.Background(), "k", nil)
	require.ErrorIs(t, err, ErrOverloaded, "reads are refused past the hard cap")

	res, err := a.MergeShard(context.Background(), a.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, res.Generations)
	require.EqualValues(t, 2, value(t, a, "k"))
	appendIDs(t, a, e.mem, 10, "k")
}

func TestAHungStoreCallIsBoundedAndReleasesEverything(t *testing.T) {
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	a := e.open("a")
	appendIDs(t, a, e.mem, 1, "k")
	require.NoError(t, a.Flush(context.Background()))
	faulty.AddRule(objstoretest.Rule{Match: objstoretest.MatchKeyPrefix(shard.WALDir, objstoretest.OpGet), Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	e.budget = nil
	_, err := a.MergeShard(ctx, a.Shard(), MergeOptions{})
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.Zero(t, a.opts.Budget.Reserved(), "the reservation was released")
	faulty.Reset()
	res, err := a.MergeShard(context.Background(), a.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Generations)
}

func TestSealIfDueSealsOnlyOldMemtables(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a")
	sealed, err := a.SealIfDue(context.Background(), time.Hour)
	require.NoError(t, err)
	require.False(t, sealed, "no writer yet")
	appendIDs(t, a, e.mem, 1, "k")
	sealed, err = a.SealIfDue(context.Background(), time.Hour)
	require.NoError(t, err)
	require.False(t, sealed, "rows are younger than the interval")
	time.Sleep(5 * time.Millisecond)
	sealed, err = a.SealIfDue(context.Background(), time.Millisecond)
	require.NoError(t, err)
	require.True(t, sealed)
	require.EqualValues(t, 1, value(t, e.open("b"), "k"))
}

func TestSizeTriggeredSeal(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a", func(o *Options) { o.Writer.SealRows = 10 })
	appendIDs(t, a, e.mem, 1, ids("k", 25)...)
	require.Eventually(t, func() bool { return pendingGens(t, a) == 1 }, 2*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 1, value(t, e.open("b"), "k0024"))
}

func TestManyPendingGenerationsWarnOncePerInterval(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	e := newEnv(t, objstoretest.NewMemory())
	a := e.open("a", func(o *Options) { o.ReadWarnGenerations = 2; o.Name = "rollout/warned" })
	for i := range 3 {
		appendIDs(t, a, e.mem, int64(i), "k")
		require.NoError(t, a.Flush(context.Background()))
	}
	require.EqualValues(t, 2, value(t, a, "k"))
	require.EqualValues(t, 2, value(t, a, "k"))
	require.Equal(t, 1, strings.Count(buf.String(), "many pending generations"), "warned, and rate-limited: %s", buf.String())
	require.Contains(t, buf.String(), "store=rollout/warned", "the warning names the store, not only its shard")
}

// A large append is written to the WAL from its own column buffers (no copy of its rows), next to
// small appends in the same group: after a crash its rows replay intact, and merge intact, in
// both WAL layouts, and in segments on a local filesystem (whose large writes bypass the page
// cache).
func TestALargeAppendWrittenFromItsOwnBuffersReplaysAndMergesIntact(t *testing.T) {
	local := func(t *testing.T) objstore.Store {
		s, err := objstore.NewLocal(t.TempDir())
		require.NoError(t, err)
		return s
	}
	memory := func(*testing.T) objstore.Store { return objstoretest.NewMemory() }
	for name, c := range map[string]struct {
		layout  func(*Options)
		objects func(*testing.T) objstore.Store
	}{
		"segments":                       {withSegments, memory},
		"entry objects":                  {withEntryObjects, memory},
		"segments on a local filesystem": {withSegments, local},
	} {
		layout := c.layout
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := newInPlaceEnv(t, c.objects(t))
			a := e.open("a", layout, func(o *Options) { o.Writer.GroupCommitWindow = 20 * time.Millisecond })
			big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB per row: a 4 MiB column
			b := array.NewRecordBuilder(e.mem, userSchema)
			for i := range 32 {
				b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("big-%02d", i))
				b.Field(1).(*array.Int64Builder).Append(int64(i))
				b.Field(2).(*array.StringBuilder).Append(big[i:])
			}
			rec := b.NewRecordBatch()
			b.Release()
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); appendIDs(t, a, e.mem, 7, "small-1", "small-2") }()
			go func() {
				defer wg.Done()
				_, err := a.Append(ctx, rec)
				require.NoError(t, err)
			}()
			wg.Wait()
			rec.Release()
			crash(a)

			again := e.open("a", layout)
			check := func(s *Store) {
				for i := range 32 {
					got, err := s.Get(ctx, fmt.Sprintf("big-%02d", i), nil)
					require.NoError(t, err)
					require.NotNil(t, got)
					require.Equal(t, big[i:], got.Column(got.Schema().FieldIndices("payload")[0]).(*array.String).Value(0))
					got.Release()
				}
				require.EqualValues(t, 7, value(t, s, "small-2"))
			}
			check(again)
			require.NoError(t, again.Flush(ctx))
			_, err := again.MergeShard(ctx, again.Shard(), MergeOptions{})
			require.NoError(t, err)
			check(e.open("reader", layout))
		})
	}
}
