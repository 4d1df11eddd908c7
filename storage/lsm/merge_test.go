package lsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

// sealN makes n generations of one row each ("g0".."g<n-1>", value i) plus any extra ids.
func sealN(t *testing.T, s *Store, e *env, n int) {
	for i := range n {
		appendIDs(t, s, e.mem, int64(i), fmt.Sprintf("g%d", i))
		require.NoError(t, s.Flush(context.Background()))
	}
}

func pendingGens(t *testing.T, s *Store) int {
	snap, err := s.Snapshot(context.Background())
	require.NoError(t, err)
	return snap.PendingGenerations()
}

func checkTable(t *testing.T, s *Store) {
	m, err := s.tbl.Latest(context.Background())
	require.NoError(t, err)
	require.NoError(t, s.tbl.Check(context.Background(), m))
}

func TestMergeByAnotherProcessFoldsGenerationsAndDropsThem(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	owner := e.open("owner")
	sealN(t, owner, e, 5)
	merger := e.open("maintenance")
	res, err := merger.MergeShard(context.Background(), owner.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.Equal(t, 5, res.Generations)
	require.Zero(t, res.Remaining)
	require.Zero(t, pendingGens(t, merger))
	for i := range 5 {
		require.EqualValues(t, i, value(t, merger, fmt.Sprintf("g%d", i)))
	}
	m, _ := merger.tbl.Latest(context.Background())
	require.EqualValues(t, 5, m.WALWatermarks[owner.Shard()])
	checkTable(t, merger)
	// Generation files are deleted once dropped (detached; give it a moment).
	require.Eventually(t, func() bool {
		objs, _ := objstore.ListAll(context.Background(), e.objects, shard.WALDir+owner.Shard()+"/gens/")
		return len(objs) == 0
	}, 2*time.Second, 10*time.Millisecond)
	// The owner keeps appending afterwards.
	appendIDs(t, owner, e.mem, 99, "after")
	require.EqualValues(t, 99, value(t, owner, "after"))
}

func TestMergeCapsBindInEitherOrderAndAGenerationIsNeverSplit(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("a")
	sealN(t, s, e, 10)
	snap, _ := s.Snapshot(context.Background())
	genBytes := footprint(snap.Shards[0].Generations[0])

	passes := func(opts MergeOptions) []int {
		var out []int
		for pendingGens(t, s) > 0 {
			res, err := s.MergeShard(context.Background(), s.Shard(), opts)
			require.NoError(t, err)
			require.Positive(t, res.Generations)
			out = append(out, res.Generations)
		}
		return out
	}
	require.Equal(t, []int{3, 3, 3, 1}, passes(MergeOptions{MaxGenerations: 3, MaxBytes: 100 * genBytes}), "generation cap binds first")
	sealN(t, s, e, 5)
	require.Equal(t, []int{2, 2, 1}, passes(MergeOptions{MaxGenerations: 8, MaxBytes: genBytes * 5 / 2}), "byte cap binds first: no generation pushes a pass past it")
	sealN(t, s, e, 4)
	require.Equal(t, []int{1, 1, 1, 1}, passes(MergeOptions{MaxGenerations: -1, MaxBytes: 1}), "an oversized generation still progresses, whole")
	sealN(t, s, e, 6)
	require.Equal(t, []int{6}, passes(MergeOptions{MaxGenerations: -1, MaxBytes: -1}), "no caps: everything in one pass")
	checkTable(t, s)
}

func TestAppendsAreNotBlockedOrLostWhileAMergeRuns(t *testing.T) {
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	owner := e.open("owner")
	sealN(t, owner, e, 4)
	// Reading generations' rows (WAL entries or segment frames; format 1 files) is slow: the
	// merge takes a while.
	faulty.AddRule(objstoretest.Rule{Match: func(op objstoretest.Op, key string) bool {
		return (op == objstoretest.OpGet || op == objstoretest.OpGetRange) &&
			(strings.HasSuffix(key, ".arrows") || strings.HasSuffix(key, ".wal") || strings.HasSuffix(key, ".arrow"))
	}, Latency: 100 * time.Millisecond})
	merger := e.open("maintenance")
	done := make(chan error)
	mergeStart := time.Now()
	var mergeTook time.Duration
	go func() {
		_, err := merger.MergeShard(context.Background(), owner.Shard(), MergeOptions{})
		mergeTook = time.Since(mergeStart)
		done <- err
	}()
	var slowest time.Duration
	for i := range 30 {
		start := time.Now()
		appendIDs(t, owner, e.mem, 1000+int64(i), fmt.Sprintf("during%d", i))
		slowest = max(slowest, time.Since(start))
		if i == 10 {
			require.NoError(t, owner.Flush(context.Background())) // a generation sealed during the merge
		}
	}
	require.NoError(t, <-done)
	require.Greater(t, mergeTook, 300*time.Millisecond, "the merge was slow (it read four generations' entries)")
	require.Less(t, slowest, 300*time.Millisecond, "appends do not wait for the merge")
	faulty.Reset()
	require.NoError(t, owner.Flush(context.Background()))
	for pendingGens(t, merger) > 0 {
		_, err := merger.MergeShard(context.Background(), owner.Shard(), MergeOptions{})
		require.NoError(t, err)
	}
	for i := range 30 {
		require.EqualValues(t, 1000+i, value(t, merger, fmt.Sprintf("during%d", i)))
	}
	for i := range 4 {
		require.EqualValues(t, i, value(t, merger, fmt.Sprintf("g%d", i)))
	}
	checkTable(t, merger)
}

func TestConcurrentMergesDoNotDuplicateRows(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	owner := e.open("owner")
	for i := range 6 {
		appendIDs(t, owner, e.mem, int64(i), ids(fmt.Sprintf("b%d-", i), 20)...)
		require.NoError(t, owner.Flush(context.Background()))
	}
	var wg sync.WaitGroup
	merged := make([]int, 4)
	for i := range merged {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := e.open(fmt.Sprintf("merger-%d", i))
			res, err := s.MergeShard(context.Background(), owner.Shard(), MergeOptions{MaxGenerations: -1})
			if err != nil {
				t.Error(err)
			}
			merged[i] = res.Generations
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range merged {
		total += n
	}
	require.Equal(t, 6, total, "every generation merged exactly once: %v", merged)
	m, _ := owner.tbl.Latest(context.Background())
	require.EqualValues(t, 120, m.Rows())
	checkTable(t, owner)
}

func TestAnInterruptedMergeLosesNothingAndTheNextConverges(t *testing.T) {
	for crashAt := 0; crashAt < 8; crashAt++ {
		t.Run(fmt.Sprint("after ", crashAt, " writes"), func(t *testing.T) {
			faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
			e := newEnv(t, faulty)
			owner := e.open("owner")
			for i := range 3 {
				appendIDs(t, owner, e.mem, int64(i), ids(fmt.Sprintf("b%d-", i), 10)...)
				require.NoError(t, owner.Flush(context.Background()))
			}
			merger := e.open("merger")
			faulty.CrashAfterWrites(crashAt)
			_, err := merger.MergeShard(context.Background(), owner.Shard(), MergeOptions{})
			faulty.Reset()
			if err != nil {
				require.True(t, errors.Is(err, objstoretest.ErrCrashed), "%v", err)
			}
			// A new process finishes the job.
			again := e.open("merger-2")
			for pendingGens(t, again) > 0 {
				_, err := again.MergeShard(context.Background(), owner.Shard(), MergeOptions{})
				require.NoError(t, err)
			}
			m, _ := again.tbl.Latest(context.Background())
			require.EqualValues(t, 30, m.Rows())
			for i := range 3 {
				for _, id := range ids(fmt.Sprintf("b%d-", i), 10) {
					require.EqualValues(t, i, value(t, again, id))
				}
			}
			checkTable(t, again)
		})
	}
}

func TestOneIDThroughTwoShardsResolvesToTheNewestWhateverTheMergeOrder(t *testing.T) {
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		e := newEnv(t, objstoretest.NewMemory())
		shards := []*Store{e.open("w0"), e.open("w1")}
		appendIDs(t, shards[0], e.mem, 1, "same")
		appendIDs(t, shards[1], e.mem, 2, "same") // later _seq
		appendIDs(t, shards[0], e.mem, 3, "other")
		appendIDs(t, shards[1], e.mem, 4, "other") // later
		for _, s := range shards {
			require.NoError(t, s.Flush(context.Background()))
		}
		reader := e.open("reader")
		require.EqualValues(t, 2, value(t, reader, "same"))
		for _, i := range order {
			_, err := reader.MergeShard(context.Background(), shards[i].Shard(), MergeOptions{})
			require.NoError(t, err)
			require.EqualValues(t, 2, value(t, reader, "same"), "order %v after merging sh %d", order, i)
			require.EqualValues(t, 4, value(t, reader, "other"))
		}
		checkTable(t, reader)
	}
}

func TestMergeWaitsForTheBudgetAndReportsIt(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	e.budget = budget.New(1<<20, nil)
	s := e.open("a")
	sealN(t, s, e, 2)
	hold, err := e.budget.Reserve(context.Background(), 1<<20)
	require.NoError(t, err)
	phases := make(chan Progress, 32)
	done := make(chan error)
	go func() {
		_, err := s.MergeShard(context.Background(), s.Shard(), MergeOptions{MaxBytes: 1 << 20, OnProgress: func(p Progress) { phases <- p }})
		done <- err
	}()
	require.Eventually(t, func() bool { return e.budget.Waiters() == 1 }, time.Second, time.Millisecond)
	sawWaiting := false
	for len(phases) > 0 {
		if p := <-phases; p.WaitingForBudget() {
			sawWaiting = true
		}
	}
	require.True(t, sawWaiting)
	hold.Release()
	require.NoError(t, <-done)
	require.Zero(t, e.budget.Reserved())
}

// A compaction holds its footprint from the merge memory budget while it runs (merges and
// compactions together stay within it): with the budget taken it waits; once the bytes are free
// it runs, and gives every byte back.
func TestCompactionReservesFromTheMergeBudget(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	e.budget = budget.New(1<<30, nil)
	s := e.open("a")
	for i := range 2 {
		appendIDs(t, s, e.mem, int64(i), fmt.Sprintf("c%d", i))
		require.NoError(t, s.Flush(ctx))
		_, err := s.MergeShard(ctx, s.Shard(), MergeOptions{MaxGenerations: -1, MaxBytes: -1})
		require.NoError(t, err)
	}
	hold, err := e.budget.Reserve(ctx, 1<<30)
	require.NoError(t, err)
	done := make(chan error, 1)
	var mu sync.Mutex
	var reports []string
	go func() {
		r, err := s.Compact(ctx, CompactOptions{Compaction: table.CompactionConfig{MinFragments: 2}, OnProgress: func(p Progress) {
			mu.Lock()
			// Budget hold as (holding, waiting), each change once (indexing and done hold nothing).
			if r := fmt.Sprintf("%t/%t", p.ReservedBytes > 0, p.WaitingForBudget()); len(reports) == 0 || reports[len(reports)-1] != r {
				reports = append(reports, r)
			}
			mu.Unlock()
		}})
		if err == nil && r.FragmentsRemoved != 2 {
			err = fmt.Errorf("compacted %d fragments, want 2", r.FragmentsRemoved)
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return e.budget.Waiters() == 1 }, 5*time.Second, time.Millisecond)
	hold.Release()
	require.NoError(t, <-done)
	require.Zero(t, e.budget.Reserved())
	mu.Lock()
	require.Equal(t, []string{"false/true", "true/false", "false/false"}, reports, "waiting, holding, given back")
	mu.Unlock()
	checkTable(t, s)
}

// A merge reserves its batch's footprint (3 x the generations' file bytes), not the MaxBytes cap:
// small merges leave the rest of the budget to others.
func TestMergeReservesItsBatchNotTheCap(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	e.budget = budget.New(64<<20, nil)
	s := e.open("a")
	sealN(t, s, e, 3)
	st, _, err := s.OwnShardState(context.Background())
	require.NoError(t, err)
	require.Positive(t, st.PendingBytes)
	var reserved int64
	_, err = s.MergeShard(context.Background(), s.Shard(), MergeOptions{MaxBytes: 1 << 30, OnProgress: func(p Progress) {
		reserved = max(reserved, p.ReservedBytes)
	}})
	require.NoError(t, err)
	require.Equal(t, 3*st.PendingBytes, reserved, "the batch's footprint, not the 1 GiB cap nor the whole budget")
	require.Zero(t, e.budget.Reserved())
}

// A merge into an indexed table also reserves the key-index run merge its upsert does (the tail
// runs it takes in): the table's IndexRunFootprint of the rows
// it merges, on top of the batch's footprint.
func TestMergeReservesTheIndexRunMergeToo(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	e.budget = budget.New(64<<20, nil)
	s := e.open("a")
	sealGenerations := func(prefix string) { // three generations of 200 new ids each
		for i := range 3 {
			appendIDs(t, s, e.mem, int64(i), ids(fmt.Sprintf("%s%d-", prefix, i), 200)...)
			require.NoError(t, s.Flush(ctx))
		}
	}
	sealGenerations("g")
	_, err := s.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	_, err = s.BuildKeyIndex(ctx)
	require.NoError(t, err)
	sealGenerations("h")
	st, _, err := s.OwnShardState(ctx)
	require.NoError(t, err)
	snap, err := s.Snapshot(ctx)
	require.NoError(t, err)
	var rows int64
	for _, sh := range snap.Shards {
		for _, g := range sh.Generations {
			rows += g.Rows
		}
	}
	require.Equal(t, int64(600), rows)
	index := s.tbl.IndexRunFootprint(snap.Table, rows)
	require.Positive(t, index, "the new run takes in the table's run (no larger than 4x its own)")
	var reserved int64
	_, err = s.MergeShard(ctx, s.Shard(), MergeOptions{OnProgress: func(p Progress) {
		reserved = max(reserved, p.ReservedBytes)
	}})
	require.NoError(t, err)
	require.Equal(t, 3*st.PendingBytes+index, reserved)
	require.Zero(t, e.budget.Reserved())
	checkTable(t, s)
}

// A maintenance worker usually shares its host name, and so its default instance id, with the
// API worker on the same host: opening the store read-only and merging must not claim the write
// shard the API worker appends to.
func TestAReadOnlyMergerWithTheWritersInstanceIDNeverFencesIt(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	writer := e.open("host-a")
	sealN(t, writer, e, 3)
	merger := e.open("host-a", func(o *Options) { o.ReadOnly = true })
	for round := range 3 {
		res, err := merger.MergeShard(context.Background(), writer.Shard(), MergeOptions{})
		require.NoError(t, err)
		require.Positive(t, res.Generations)
		appendIDs(t, writer, e.mem, int64(100+round), fmt.Sprintf("after%d", round))
		require.NoError(t, writer.Flush(context.Background()))
	}
	for round := range 3 {
		require.EqualValues(t, 100+round, value(t, merger, fmt.Sprintf("after%d", round)))
	}
	rec := rows(e.mem, []string{"x"}, 1)
	defer rec.Release()
	_, err := merger.Append(context.Background(), rec)
	require.ErrorIs(t, err, ErrReadOnly)
	_, err = merger.Delete(context.Background(), []string{"x"})
	require.ErrorIs(t, err, ErrReadOnly)
	require.NoError(t, merger.Flush(context.Background()))
}

// A merge writes a fragment under the compaction's target uncompressed (compaction compresses it
// with its tier) by default, and compressed when told to always compress.
func TestAMergesFragmentUnderTheCompactionTargetIsWrittenUncompressed(t *testing.T) {
	for _, tc := range []struct {
		opts MergeOptions
		want compress.Compression
	}{{MergeOptions{}, compress.Codecs.Uncompressed}, {MergeOptions{UncompressedBelowRows: -1}, compress.Codecs.Lz4Raw}} {
		e := newEnv(t, objstoretest.NewMemory())
		s := e.open("owner")
		sealN(t, s, e, 3)
		res, err := s.MergeShard(context.Background(), s.Shard(), tc.opts)
		require.NoError(t, err)
		require.Equal(t, 3, res.Generations)
		m, err := s.tbl.Latest(context.Background())
		require.NoError(t, err)
		require.Len(t, m.Fragments, 1)
		data, err := e.objects.Get(context.Background(), m.Fragments[0].Path)
		require.NoError(t, err)
		pf, err := file.NewParquetReader(bytes.NewReader(data))
		require.NoError(t, err)
		for c := range pf.MetaData().RowGroup(0).NumColumns() {
			cc, err := pf.MetaData().RowGroup(0).ColumnChunk(c)
			require.NoError(t, err)
			require.Equal(t, tc.want, cc.Compression(), "options %+v, column %d", tc.opts, c)
		}
		require.NoError(t, pf.Close())
		for i := range 3 {
			require.EqualValues(t, i, value(t, s, fmt.Sprintf("g%d", i)))
		}
	}
}

// Merge calls BetweenPasses between its passes (never before the first or after the last, and
// with no merge memory held); an error there ends the merge with what the earlier passes
// committed, and the next merge finishes the rest.
func TestMergeCallsBetweenPassesAndStopsOnItsError(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	owner := e.open("owner")
	sealN(t, owner, e, 5)
	merger := e.open("maintenance")
	calls := 0
	stop := errors.New("stop here")
	opts := MergeOptions{MaxGenerations: 2, BetweenPasses: func(context.Context) error {
		calls++
		require.Zero(t, merger.opts.Budget.Reserved(), "no merge memory held between passes")
		if calls == 2 {
			return stop
		}
		return nil
	}}
	sum, err := merger.Merge(context.Background(), opts, 0)
	require.ErrorIs(t, err, stop)
	require.Positive(t, sum.Generations, "what the passes before committed stays")
	require.Equal(t, 5-sum.Generations, pendingGens(t, merger))
	first := sum.Generations
	opts.BetweenPasses = func(context.Context) error { calls++; return nil }
	sum, err = merger.Merge(context.Background(), opts, 0)
	require.NoError(t, err)
	require.Equal(t, 5-first, sum.Generations)
	require.Zero(t, pendingGens(t, merger))
	require.Equal(t, calls, 2+sum.Passes-1, "called before every pass but the first")
	for i := range 5 {
		require.EqualValues(t, i, value(t, merger, fmt.Sprintf("g%d", i)))
	}
}
