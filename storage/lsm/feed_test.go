package lsm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

// feedEvent is one delivered row.
type feedEvent struct {
	key      string
	seq      uint64
	value    int64
	deleted  bool
	complete *bool
}

func feedEvents(t *testing.T, b FeedBatch) []feedEvent {
	t.Helper()
	if b.Rows == nil {
		return nil
	}
	rec := b.Rows
	col := func(name string) int { return rec.Schema().FieldIndices(name)[0] }
	keys := rec.Column(col("id")).(*array.String)
	values := rec.Column(col("value")).(*array.Int64)
	seqs := rec.Column(col(table.SeqColumn)).(*array.Uint64)
	ops := rec.Column(col(FeedOpColumn)).(*array.String)
	var complete *array.Boolean
	if idx := rec.Schema().FieldIndices(FeedCompleteColumn); len(idx) > 0 {
		complete = rec.Column(idx[0]).(*array.Boolean)
	}
	out := make([]feedEvent, rec.NumRows())
	for i := range out {
		out[i] = feedEvent{key: keys.Value(i), seq: seqs.Value(i), value: values.Value(i), deleted: ops.Value(i) == FeedOpDelete}
		if complete != nil && complete.IsValid(i) {
			c := complete.Value(i)
			out[i].complete = &c
		}
	}
	return out
}

// feedConsumer is a consumer with a committed cursor (what a catalog would keep) that the
// stores' retention honours.
type feedConsumer struct {
	mu        sync.Mutex
	committed FeedCursor
}

func (c *feedConsumer) holds(context.Context) (Holds, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Holds{Consumers: true, Floors: c.committed.Floors()}, nil
}

// The change feed against a model: two writers append and delete, seal, merges of either shard
// (keeping what the consumer has not committed), compactions and releases run at random, and
// a consumer reads batches of random sizes, commits some and restarts from its committed cursor
// at random. Every committed delivery is a sealed row delivered once; nothing sealed is skipped
// (a key's version is delivered, or a newer one of it); at the end the consumer's view equals
// the store.
func TestChangeFeedModel(t *testing.T) {
	skipOnObjectStores(t)
	seeds, steps := []uint64{1, 2, 3}, 200
	if testing.Short() {
		seeds, steps = seeds[:1], 60
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runFeedModel(t, seed, steps) })
	}
}

func runFeedModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 77))
	e := newEnv(t, objstoretest.NewMemory())
	consumer := &feedConsumer{}
	withHolds := func(o *Options) { o.Holds = consumer.holds }
	writers := []*Store{e.open("w0", withHolds), e.open("w1", withHolds)}
	reader := e.open("reader", withHolds)
	ctx := context.Background()

	model := map[string]int64{}         // the store
	sealedSeqs := map[string][]uint64{} // key -> every sealed version's _seq
	unsealed := []map[string][]uint64{{}, {}}
	seen := map[string]map[uint64]bool{} // key -> committed deliveries
	var uncommitted []feedEvent
	cur := FeedCursor{}
	retainedSeen := 0

	seal := func(i int) {
		require.NoError(t, writers[i].Flush(ctx))
		for k, seqs := range unsealed[i] {
			sealedSeqs[k] = append(sealedSeqs[k], seqs...)
		}
		unsealed[i] = map[string][]uint64{}
	}
	commit := func() {
		for _, ev := range uncommitted {
			require.False(t, seen[ev.key][ev.seq], "delivered twice: %s@%d", ev.key, ev.seq)
			if seen[ev.key] == nil {
				seen[ev.key] = map[uint64]bool{}
			}
			seen[ev.key][ev.seq] = true
		}
		uncommitted = nil
		consumer.mu.Lock()
		consumer.committed = cur
		consumer.mu.Unlock()
	}
	poll := func() int {
		b, err := reader.Changes(ctx, cur, FeedOptions{Limit: 1 + rng.IntN(40)})
		require.NoError(t, err)
		defer b.Release()
		evs := feedEvents(t, b)
		batchKeys := map[string]bool{}
		for _, ev := range evs {
			require.False(t, batchKeys[ev.key], "key %s twice in one batch", ev.key)
			batchKeys[ev.key] = true
		}
		uncommitted = append(uncommitted, evs...)
		cur = b.Next
		// The cursor round-trips through its string form.
		again, err := ParseFeedCursor(cur.String())
		require.NoError(t, err)
		require.Equal(t, cur.String(), again.String())
		cur = again
		return len(evs)
	}
	for step := range steps {
		i := rng.IntN(2)
		w := writers[i]
		switch op := rng.IntN(12); {
		case op < 5:
			var keys []string
			for range 1 + rng.IntN(6) {
				keys = append(keys, fmt.Sprintf("k%03d", rng.IntN(60)))
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			appendIDs(t, w, e.mem, int64(step), keys...)
			for _, k := range keys {
				model[k] = int64(step)
			}
			recordUnsealed(t, w, keys, unsealed[i])
		case op < 6:
			k := fmt.Sprintf("k%03d", rng.IntN(60))
			_, err := w.Delete(ctx, []string{k})
			require.NoError(t, err)
			delete(model, k)
			recordUnsealed(t, w, []string{k}, unsealed[i])
		case op < 8:
			seal(i)
		case op < 9:
			_, err := reader.MergeShard(ctx, writers[rng.IntN(2)].Shard(), MergeOptions{MaxGenerations: 1 + rng.IntN(4)})
			require.NoError(t, err)
		case op < 10:
			if rng.IntN(2) == 0 {
				_, err := reader.tbl.Compact(ctx, table.CompactionConfig{MinFragments: 2})
				require.NoError(t, err)
			} else {
				_, err := reader.ReleaseRetained(ctx)
				require.NoError(t, err)
			}
		default:
			poll()
			switch rng.IntN(4) {
			case 0: // a restart: what was not committed is read again
				uncommitted = nil
				consumer.mu.Lock()
				cur = consumer.committed
				consumer.mu.Unlock()
			case 1, 2:
				commit()
			}
		}
		for _, w := range writers {
			require.NoError(t, shard.Check(ctx, e.objects, w.Shard()), "step %d", step)
			m, err := w.shards.LatestManifest(ctx, w.Shard())
			require.NoError(t, err)
			if m != nil && len(m.Retained) > 0 {
				retainedSeen++
			}
		}
	}
	require.NotZero(t, retainedSeen, "no merged generation was ever retained for the consumer")
	// Drain: seal everything, read to the end, commit.
	seal(0)
	seal(1)
	for poll() > 0 {
	}
	commit()
	for k, seqs := range sealedSeqs {
		top := slices.Max(seqs)
		require.True(t, seen[k][top], "the newest sealed version of %s (%d) was never delivered", k, top)
		for _, s := range seqs {
			if !seen[k][s] {
				// Skipped only as an older version of a key within one generation or batch.
				require.Less(t, s, top, "version %d of %s skipped", s, k)
			}
		}
	}
	// The newest committed delivery of every key is the store's state.
	newest := map[string]uint64{}
	for k, seqs := range seen {
		for s := range seqs {
			newest[k] = max(newest[k], s)
		}
	}
	for k, v := range model {
		require.Equal(t, v, value(t, reader, k))
		top := slices.Max(sealedSeqs[k])
		require.Equal(t, top, newest[k], "key %s", k)
	}
}

// skipOnObjectStores skips a feed test in make test's object-store passes: the feed reads
// through the same shard access (key files, WAL entries, manifests) on every store, which those
// passes exercise through the other tests, and a long model there costs a round trip a step. The
// expiry and cut tests run on every store.
func skipOnObjectStores(t *testing.T) {
	if testStorage != "" {
		t.Skipf("the main pass runs it; on %s every step costs round trips", testStorage)
	}
}

// recordUnsealed notes the _seq each key got from the last write to w (read back from its
// memtable view).
func recordUnsealed(t *testing.T, w *Store, keys []string, into map[string][]uint64) {
	t.Helper()
	for _, k := range keys {
		row, ok := w.residentWriter().Lookup(k)
		require.True(t, ok)
		into[k] = append(into[k], row.Seq)
		row.Rec.Release()
	}
}

// Complete groups: rows of a group (same value) come out together, once every member is
// visible, never split across batches, exactly once per commit (the consumer drops a third of
// its batches uncommitted, as across restarts); a group that stays incomplete past its timeout
// comes out flagged incomplete; the cursor carries held rows across batches, merges of either
// shard and releases.
func TestChangeFeedDeliversCompleteGroups(t *testing.T) {
	skipOnObjectStores(t)
	e := newEnv(t, objstoretest.NewMemory())
	consumer := &feedConsumer{}
	withHolds := func(o *Options) { o.Holds = consumer.holds }
	a, b := e.open("a", withHolds), e.open("b", withHolds)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	const size = 4
	// 30 groups of 4 members, written member by member in random order over two writers.
	var writes [][2]int
	for g := range 30 {
		for m := range size {
			writes = append(writes, [2]int{g, m})
		}
	}
	rng.Shuffle(len(writes), func(i, j int) { writes[i], writes[j] = writes[j], writes[i] })
	cur := FeedCursor{}
	delivered := map[int64][]string{}
	batches := 0
	// read reads to the feed's end; a third of the batches are dropped as by a consumer that
	// restarts before committing them (it reads again from its committed cursor).
	read := func(now time.Time, timeout time.Duration) {
		for {
			bt, err := a.Changes(ctx, cur, FeedOptions{Limit: 1 + rng.IntN(9), Now: now,
				Groups: &FeedGroups{Column: "value", Size: size, Timeout: timeout}})
			require.NoError(t, err)
			evs := feedEvents(t, bt)
			bt.Release()
			if len(evs) > 0 && rng.IntN(3) == 0 {
				continue // a restart: cur stays the committed cursor
			}
			batch := map[int64]int{}
			for _, ev := range evs {
				require.NotNil(t, ev.complete)
				delivered[ev.value] = append(delivered[ev.value], ev.key)
				batch[ev.value]++
			}
			for g, n := range batch {
				require.Len(t, delivered[g], n, "group %d split across batches, or delivered twice", g)
				if timeout == 0 {
					require.Equal(t, size, n, "group %d incomplete", g)
				}
			}
			cur, err = ParseFeedCursor(bt.Next.String())
			require.NoError(t, err)
			consumer.mu.Lock()
			consumer.committed = cur
			consumer.mu.Unlock()
			batches++
			if len(evs) == 0 {
				return
			}
		}
	}
	for i, w := range writes {
		s := []*Store{a, b}[rng.IntN(2)]
		appendIDs(t, s, e.mem, int64(w[0]), fmt.Sprintf("g%02d-m%d", w[0], w[1]))
		if rng.IntN(3) == 0 {
			require.NoError(t, s.Flush(ctx))
		}
		if i%17 == 0 {
			_, err := a.MergeShard(ctx, []*Store{a, b}[rng.IntN(2)].Shard(), MergeOptions{})
			require.NoError(t, err)
			_, err = a.ReleaseRetained(ctx)
			require.NoError(t, err)
		}
		if i%5 == 0 {
			read(time.Now(), 0)
		}
	}
	require.NoError(t, a.Flush(ctx))
	require.NoError(t, b.Flush(ctx))
	read(time.Now(), 0)
	require.Len(t, delivered, 30)
	for g, keys := range delivered {
		require.Len(t, keys, size, "group %d", g)
	}
	require.Zero(t, cur.Held())

	// A group short of members waits, then goes out flagged incomplete after its timeout.
	appendIDs(t, b, e.mem, 99, "late-1", "late-2")
	require.NoError(t, b.Flush(ctx))
	bt, err := a.Changes(ctx, cur, FeedOptions{Groups: &FeedGroups{Column: "value", Size: size, Timeout: time.Hour}})
	require.NoError(t, err)
	require.Nil(t, bt.Rows)
	require.Equal(t, 2, bt.Next.Held())
	bt, err = a.Changes(ctx, bt.Next, FeedOptions{Now: time.Now().Add(2 * time.Hour), Groups: &FeedGroups{Column: "value", Size: size, Timeout: time.Hour}})
	require.NoError(t, err)
	evs := feedEvents(t, bt)
	bt.Release()
	require.Len(t, evs, 2)
	for _, ev := range evs {
		require.False(t, *ev.complete)
	}
	require.Zero(t, bt.Next.Held())
}

// A position whose generations were released answers FeedExpiredError with a restart point:
// the base table at a version plus the feed from its watermarks, which together hold the store.
func TestChangeFeedExpiredPositionNamesARestartPoint(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("a") // no holds: a merge releases what it merged
	ctx := context.Background()
	start, err := s.FeedHead(ctx)
	require.NoError(t, err)
	appendIDs(t, s, e.mem, 1, "x", "y")
	require.NoError(t, s.Flush(ctx))
	_, err = s.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	appendIDs(t, s, e.mem, 2, "z")
	require.NoError(t, s.Flush(ctx))
	_, err = s.Changes(ctx, start, FeedOptions{})
	var expired *FeedExpiredError
	require.ErrorAs(t, err, &expired)
	require.Equal(t, s.Shard(), expired.Shard)
	page, err := s.Scan(ctx, ScanOptions{Version: expired.RestartVersion, Source: SourceBase})
	require.NoError(t, err)
	require.EqualValues(t, 2, page.Rows.NumRows())
	page.Rows.Release()
	b, err := s.Changes(ctx, expired.RestartCursor, FeedOptions{})
	require.NoError(t, err)
	evs := feedEvents(t, b)
	b.Release()
	require.Len(t, evs, 1)
	require.Equal(t, "z", evs[0].key)
}

// A cut reads the same rows after merges, compactions and releases as when it was taken, while
// holds keep its generations; without them it reports ErrCutExpired instead of another answer.
func TestCutReadsTheSameRowsLater(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	var mu sync.Mutex
	var held *Cut
	holds := func(context.Context) (Holds, error) {
		mu.Lock()
		defer mu.Unlock()
		if held == nil {
			return Holds{}, nil
		}
		return Holds{Pinned: held.Pins()}, nil
	}
	s := e.open("a", func(o *Options) { o.Holds = holds })
	w := e.open("b", func(o *Options) { o.Holds = holds })
	ctx := context.Background()
	appendIDs(t, s, e.mem, 1, ids("a", 20)...)
	require.NoError(t, s.Flush(ctx))
	_, err := s.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	appendIDs(t, s, e.mem, 2, ids("a", 5)...)
	appendIDs(t, w, e.mem, 3, ids("b", 5)...)
	require.NoError(t, s.Flush(ctx))
	require.NoError(t, w.Flush(ctx))
	appendIDs(t, s, e.mem, 9, "unsealed") // not in the cut: still in a memtable
	cut, err := s.CurrentCut(ctx)
	require.NoError(t, err)
	mu.Lock()
	held = &cut
	mu.Unlock()
	want, _ := scanAllAt(t, s, ScanOptions{Cut: &cut})
	require.Len(t, want, 25)
	// Writes, merges, compaction, releases and a version cleanup keeping the cut's version.
	appendIDs(t, w, e.mem, 4, ids("a", 3)...)
	require.NoError(t, w.Flush(ctx))
	require.NoError(t, s.Flush(ctx))
	for _, st := range []*Store{s, w} {
		_, err := s.MergeShard(ctx, st.Shard(), MergeOptions{})
		require.NoError(t, err)
	}
	_, err = s.tbl.Compact(ctx, table.CompactionConfig{MinFragments: 2})
	require.NoError(t, err)
	_, err = s.ReleaseRetained(ctx)
	require.NoError(t, err)
	_, err = s.CleanupVersions(ctx, table.CleanupOptions{OlderThan: time.Nanosecond, Grace: time.Nanosecond, Keep: []uint64{cut.TableVersion}})
	require.NoError(t, err)
	got, _ := scanAllAt(t, s, ScanOptions{Cut: &cut})
	require.Equal(t, want, got)
	rec, err := s.GetCut(ctx, &cut, "a0001", []string{"value"})
	require.NoError(t, err)
	require.EqualValues(t, 2, rec.Column(0).(*array.Int64).Value(0))
	rec.Release()
	// Released: the cut cannot be read any more, and says so.
	mu.Lock()
	held = nil
	mu.Unlock()
	_, err = s.ReleaseRetained(ctx)
	require.NoError(t, err)
	_, err = s.Scan(ctx, ScanOptions{Cut: &cut})
	require.ErrorIs(t, err, ErrCutExpired)
}

// scanAllAt pages through a scan with opts, returning key -> value.
func scanAllAt(t *testing.T, s *Store, opts ScanOptions) (map[string]int64, int) {
	t.Helper()
	out := map[string]int64{}
	pages := 0
	for {
		opts.Limit = 7
		page, err := s.Scan(context.Background(), opts)
		require.NoError(t, err)
		keys := page.Rows.Column(page.Rows.Schema().FieldIndices("id")[0]).(*array.String)
		vals := page.Rows.Column(page.Rows.Schema().FieldIndices("value")[0]).(*array.Int64)
		for i := 0; i < keys.Len(); i++ {
			out[keys.Value(i)] = vals.Value(i)
		}
		page.Rows.Release()
		pages++
		if page.Next == "" {
			return out, pages
		}
		opts.After = page.Next
	}
}

func FuzzParseFeedCursor(f *testing.F) {
	f.Add(FeedCursor{shards: map[string]shardPos{"a": {3, 4}}, held: []heldRow{{"a", 4, 1}, {"b", 2, 0}}}.String())
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseFeedCursor(s)
		if err != nil {
			return
		}
		again, err := ParseFeedCursor(c.String())
		require.NoError(t, err)
		require.Equal(t, c.String(), again.String())
	})
}

// What a consumer holds lapses past RetainFor (its position then expires), while holders that
// cannot be read keep everything.
func TestRetentionLapsesPastItsBoundAndKeepsAllWhenHoldersAreUnknown(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	var mu sync.Mutex
	var holdsErr error
	holds := func(context.Context) (Holds, error) {
		mu.Lock()
		defer mu.Unlock()
		return Holds{Consumers: true}, holdsErr // a consumer that has read nothing: every shard from 0
	}
	s := e.open("a", func(o *Options) { o.Holds = holds; o.RetainFor = time.Hour })
	ctx := context.Background()
	write := func(id string) {
		appendIDs(t, s, e.mem, 1, id)
		require.NoError(t, s.Flush(ctx))
		_, err := s.MergeShard(ctx, s.Shard(), MergeOptions{})
		require.NoError(t, err)
	}
	read := func() error {
		b, err := s.Changes(ctx, FeedCursor{}, FeedOptions{})
		b.Release()
		return err
	}
	// The catalog cannot answer: the merge keeps, and so does a release.
	mu.Lock()
	holdsErr = fmt.Errorf("catalog down")
	mu.Unlock()
	write("x")
	_, err := s.ReleaseRetained(ctx)
	require.NoError(t, err)
	require.NoError(t, read(), "kept while the holders are unknown")
	// The holders answer again, within the bound: still kept.
	mu.Lock()
	holdsErr = nil
	mu.Unlock()
	write("y")
	require.NoError(t, read())
	// Past the bound, the consumer's hold lapses: the next release drops it, the position expires.
	s.opts.RetainFor = time.Nanosecond
	n, err := s.ReleaseRetained(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	var expired *FeedExpiredError
	require.ErrorAs(t, read(), &expired)
}
