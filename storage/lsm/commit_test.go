package lsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
)

// appendUntilError appends one new id at a time from each of n goroutines until an append fails
// or stop is closed; it returns every acknowledged id and the errors seen.
func appendUntilError(t *testing.T, s *Store, e *env, n int, stop <-chan struct{}) (acked []string, errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("g%02d-%05d", g, i)
				rec := rows(e.mem, []string{id}, int64(i))
				_, err := s.Append(context.Background(), rec)
				rec.Release()
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					acked = append(acked, id)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return acked, errs
}

func TestAClaimWhileGroupsAreInFlightKeepsEveryAcknowledgedAppend(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
			e := newEnv(t, faulty)
			inFlight := func(o *Options) { o.Writer.CommitsInFlight = 4 }
			old := e.open("same-id", inFlight)
			// Entry and frame writes take a while, so several groups are in flight when the claim
			// lands.
			faulty.AddRule(objstoretest.Rule{Match: groupWrite(old.Shard()), Latency: time.Duration(1+round) * time.Millisecond})
			claimed := make(chan error, 1)
			var newer *Store
			go func() {
				// Claim once the old writer has acknowledged something (its first appender's
				// first row is readable there), while later groups are in flight.
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					if rec, err := old.Get(context.Background(), "g00-00000", nil); err == nil && rec != nil {
						rec.Release()
						break
					}
				}
				time.Sleep(time.Duration(round) * time.Millisecond)
				o := e.opts("same-id")
				inFlight(&o)
				var err error
				newer, err = Open(context.Background(), e.objects, o)
				claimed <- err
			}()
			acked, errs := appendUntilError(t, old, e, 8, nil)
			require.NotEmpty(t, acked)
			require.Len(t, errs, 8, "every appender stops at a fenced write")
			for _, err := range errs {
				require.ErrorIs(t, err, ErrFenced)
			}
			require.NoError(t, <-claimed)
			t.Cleanup(func() { _ = newer.Close(context.Background()) })
			faulty.Reset()
			require.NoError(t, newer.Flush(context.Background()))
			reader := e.open("reader")
			for _, id := range acked {
				require.NotEqualValues(t, -1, value(t, reader, id), "acknowledged before the claim: %s", id)
			}
		})
	}
}

func TestSealsBetweenGroupsInFlightLoseNothingAcrossACrash(t *testing.T) {
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	s := e.open("a", func(o *Options) { o.Writer.CommitsInFlight = 4 })
	faulty.AddRule(objstoretest.Rule{Match: groupWrite(s.Shard()), Latency: time.Millisecond})
	stop := make(chan struct{})
	var seals atomic.Int64
	var sealer sync.WaitGroup
	sealer.Add(1)
	go func() {
		defer sealer.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
				if err := s.Flush(context.Background()); err == nil {
					seals.Add(1)
				}
			}
		}
	}()
	// Stop after 150 ms and at least four seals (however slow the machine), or at 10 s.
	go func() {
		start := time.Now()
		for (time.Since(start) < 150*time.Millisecond || seals.Load() < 4) && time.Since(start) < 10*time.Second {
			time.Sleep(5 * time.Millisecond)
		}
		close(stop)
	}()
	acked, errs := appendUntilError(t, s, e, 8, stop)
	sealer.Wait()
	require.Empty(t, errs)
	require.Greater(t, seals.Load(), int64(3))
	crash(s)
	faulty.Reset()

	// The restarted process replays what was not sealed; another process sees it after a flush.
	again := e.open("a")
	require.NoError(t, again.Flush(context.Background()))
	reader := e.open("reader")
	for _, id := range acked {
		require.NotEqualValues(t, -1, value(t, reader, id), "acknowledged: %s", id)
	}
}

func TestAFailedGroupWriteFailsOnlyItsAppends(t *testing.T) {
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	s := e.open("a")
	appendIDs(t, s, e.mem, 0, "claimed") // the shard is claimed (its fence entry written) first
	faulty.AddRule(objstoretest.Rule{Match: groupWrite(s.Shard()), Err: objstoretest.ErrInjected, Times: 1})
	rec := rows(e.mem, []string{"lost"}, 1)
	_, err := s.Append(context.Background(), rec)
	rec.Release()
	require.True(t, errors.Is(err, objstoretest.ErrInjected), "got %v", err)
	appendIDs(t, s, e.mem, 2, "kept")
	require.NoError(t, s.Flush(context.Background()))
	reader := e.open("reader")
	require.EqualValues(t, -1, value(t, reader, "lost"))
	require.EqualValues(t, 2, value(t, reader, "kept"))
}

func TestEntriesOmitColumnsThatAreNullInEveryRow(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("a")
	b := array.NewRecordBuilder(e.mem, arrow.NewSchema(userSchema.Fields()[:2], nil)) // no payload
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	_, err := s.Append(ctx, rec)
	rec.Release()
	require.NoError(t, err)

	entries := walPayloads(t, e.objects, s.Shard())
	data := entries[uint64(len(entries))] // the claim's fence, then this append
	require.NotNil(t, data)
	parts, stored, err := arrowutil.ReadBytesBatchesCopy(data, e.mem, 0)
	require.NoError(t, err)
	defer releaseAll(parts)
	require.Empty(t, stored.FieldIndices("payload"), "an all-null column is not written")
	require.NotEmpty(t, stored.FieldIndices("value"))

	require.NoError(t, s.Flush(ctx))
	got, err := e.open("reader").Get(ctx, "y", nil)
	require.NoError(t, err)
	defer got.Release()
	require.True(t, got.Column(got.Schema().FieldIndices("payload")[0]).IsNull(0), "restored as null on read")
	require.EqualValues(t, 2, got.Column(got.Schema().FieldIndices("value")[0]).(*array.Int64).Value(0))
}

// hookedWrites calls before() ahead of every group write of shard — an entry object's
// put-if-absent, or a segment frame's payload write — and what it returns after the write.
// shard is set (and cleared) while no write is in flight.
type hookedWrites struct {
	*objstoretest.WriteHooks
	sh     string
	before func() (after func())
}

func newHookedWrites(inner objstore.Store, before func() (after func())) *hookedWrites {
	h := &hookedWrites{before: before}
	h.WriteHooks = &objstoretest.WriteHooks{Store: inner,
		BeforePut: func(key string, _ []byte) func() {
			if h.sh != "" && strings.HasPrefix(key, shard.EntryPrefix(h.sh)) {
				return h.before()
			}
			return nil
		},
		BeforeWriteAt: func(key string, p []byte) func() {
			if h.sh != "" && strings.HasPrefix(key, shard.SegmentPrefix(h.sh)) && len(p) > shard.FrameHeaderSize {
				return h.before()
			}
			return nil
		}}
	return h
}

func TestASecondGroupIsWrittenWhileTheFirstIsInFlight(t *testing.T) {
	// Each group write waits (up to a second) until a second one is in flight.
	var inFlight, most atomic.Int32
	store := newHookedWrites(objstoretest.NewMemory(), func() func() {
		n := inFlight.Add(1)
		for cur := most.Load(); n > cur && !most.CompareAndSwap(cur, n); cur = most.Load() {
		}
		for deadline := time.Now().Add(time.Second); most.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		return func() { inFlight.Add(-1) }
	})
	e := newEnv(t, store)
	s := e.open("a")                     // default CommitsInFlight
	appendIDs(t, s, e.mem, 0, "claimed") // the first write claims the shard (its fence entry)
	store.sh = s.Shard()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				time.Sleep(20 * time.Millisecond) // after the first group has been taken
			}
			appendIDs(t, s, e.mem, int64(i), fmt.Sprint("k", i))
		}()
	}
	wg.Wait()
	require.EqualValues(t, 2, most.Load(), "two group commits were in flight at once")
	require.EqualValues(t, 1, value(t, s, "k1"))
}

func TestGroupsOfAppendsAreReadBackRowByRow(t *testing.T) {
	// 3-row appends are joined into one memtable batch per group; 40-row appends stay a batch
	// each, located in the entry by their first row.
	for _, perAppend := range []int{3, 40} /* below and above the rows per append under which a group's appends are joined */ {
		t.Run(fmt.Sprint(perAppend, "-rows"), func(t *testing.T) { testGroupsReadBack(t, perAppend) })
	}
}

func testGroupsReadBack(t *testing.T, perAppend int) {
	ctx := context.Background()
	// Group writes wait for the phase's gate, so that appends arriving meanwhile form groups.
	var gate chan struct{}
	store := newHookedWrites(objstoretest.NewMemory(), func() func() { <-gate; return func() {} })
	e := newEnv(t, store)
	s := e.open("a")
	appendIDs(t, s, e.mem, 0, "claimed")
	store.sh = s.Shard()
	noPayload := arrow.NewSchema(userSchema.Fields()[:2], nil)
	idsOf := func(i int) []string {
		ids := make([]string, perAppend)
		for j := range ids {
			ids[j] = fmt.Sprint("k", i, "-", j)
		}
		return ids
	}
	appendShape := func(i int, withPayload bool) {
		if withPayload {
			appendIDs(t, s, e.mem, int64(i), idsOf(i)...)
			return
		}
		b := array.NewRecordBuilder(e.mem, noPayload)
		defer b.Release()
		for _, id := range idsOf(i) {
			b.Field(0).(*array.StringBuilder).Append(id)
			b.Field(1).(*array.Int64Builder).Append(int64(i))
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		_, err := s.Append(ctx, rec)
		require.NoError(t, err)
	}
	// Phase 1: one shape (entries spliced from the appends' encodings); phase 2: two shapes in
	// the same groups (entries re-encoded from the concatenated records).
	for phase, mixed := range []bool{false, true} {
		gate = make(chan struct{})
		var wg sync.WaitGroup
		for i := phase * 100; i < phase*100+12; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				appendShape(i, !mixed || i%2 == 0)
			}()
		}
		time.Sleep(50 * time.Millisecond) // the appends queue up behind the held writes
		close(gate)
		wg.Wait()
	}
	store.sh = ""

	// Some entry holds several appends, each still its own record batch when spliced.
	most := 0
	for _, data := range walPayloads(t, e.objects, s.Shard()) {
		r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(e.mem))
		require.NoError(t, err)
		n := 0
		for r.Next() {
			n++
		}
		require.NoError(t, r.Err())
		r.Release()
		most = max(most, n)
	}
	require.Greater(t, most, 1, "appends were grouped and spliced into one entry")

	check := func(reader *Store) {
		for phase, mixed := range []bool{false, true} {
			for i := phase * 100; i < phase*100+12; i++ {
				for _, id := range idsOf(i) {
					got, err := reader.Get(ctx, id, nil)
					require.NoError(t, err)
					require.NotNil(t, got, id)
					require.EqualValues(t, i, got.Column(got.Schema().FieldIndices("value")[0]).(*array.Int64).Value(0), id)
					payload := got.Column(got.Schema().FieldIndices("payload")[0])
					if !mixed || i%2 == 0 {
						require.Equal(t, "payload-"+id, payload.(*array.String).Value(0), id)
					} else {
						require.True(t, payload.IsNull(0), id)
					}
					got.Release()
				}
			}
		}
	}
	check(s) // from the memtable
	// A crash before any seal: the restarted process replays the spliced entries (several
	// batches each) into its memtable, then seals them by (entry, row).
	crash(s)
	s = e.open("a")
	check(s)
	require.NoError(t, s.Flush(ctx))
	check(e.open("reader")) // through the generation's key file: (entry, row) across appends
	res, err := s.MergeShard(ctx, s.Shard(), MergeOptions{MaxGenerations: -1, MaxBytes: -1})
	require.NoError(t, err)
	require.Positive(t, res.Generations)
	check(e.open("after-merge")) // from the base table
}

// jitteryEntries is an object store whose WAL entry writes take a random while and sometimes fail
// (before the write, or after it landed, as a timed-out request does), and whose listings come
// four objects a page with a pause between pages: a listing is no snapshot, so an entry below the
// highest one found may land after its page was read.
type jitteryEntries struct {
	objstore.Store
	mu  sync.Mutex
	rng *rand.Rand
}

func (j *jitteryEntries) draw() (time.Duration, float64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return time.Duration(j.rng.Int64N(int64(3 * time.Millisecond))), j.rng.Float64()
}

func (j *jitteryEntries) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if !strings.Contains(key, "/entries/") {
		return j.Store.PutIfAbsent(ctx, key, data)
	}
	wait, dice := j.draw()
	time.Sleep(wait)
	if dice < 0.06 {
		return objstoretest.ErrInjected
	}
	err := j.Store.PutIfAbsent(ctx, key, data)
	if err == nil && dice > 0.97 {
		return objstoretest.ErrInjected // landed, but the writer never hears so
	}
	return err
}

func (j *jitteryEntries) List(ctx context.Context, prefix, startAfter string, limit int) (objstore.ListPage, error) {
	wait, _ := j.draw()
	time.Sleep(wait / 12)
	return j.Store.List(ctx, prefix, startAfter, min(limit, 4))
}

// TestAClaimFencesEveryPositionAnUncheckedWriterCouldStillTake races claims against a writer with
// many groups in flight that acknowledges entries without re-reading the manifest (the
// manifest's unchecked window), with entry writes that are slow, fail, or land unheard, and
// listings that are no snapshot. Every append acknowledged by either writer must be readable;
// the old writer's appenders all end fenced.
func TestAClaimFencesEveryPositionAnUncheckedWriterCouldStillTake(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			seed := uint64(round)*7919 + 1
			store := &jitteryEntries{Store: objstoretest.NewMemory(), rng: rand.New(rand.NewPCG(seed, seed))}
			e := newEnv(t, store)
			inFlight := func(o *Options) { o.Writer.CommitsInFlight = 8; o.Writer.EntryObjects = true }
			old := e.open("same-id", inFlight)
			var mu sync.Mutex
			var acked []string
			var wg sync.WaitGroup
			fencedAppenders := atomic.Int64{}
			appendTo := func(s *Store, prefix string, n int, stop <-chan struct{}) {
				for g := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; ; i++ {
							select {
							case <-stop:
								return
							default:
							}
							id := fmt.Sprintf("%s%02d-%05d", prefix, g, i)
							rec := rows(e.mem, []string{id}, int64(i))
							_, err := s.Append(context.Background(), rec)
							rec.Release()
							switch {
							case err == nil:
								mu.Lock()
								acked = append(acked, id)
								mu.Unlock()
							case errors.Is(err, ErrFenced):
								if s == old {
									fencedAppenders.Add(1)
								}
								return
							case !errors.Is(err, objstoretest.ErrInjected):
								t.Errorf("append %s: %v", id, err)
								return
							}
						}
					}()
				}
			}
			stopNewer, stopOld := make(chan struct{}), make(chan struct{})
			appendTo(old, "old", 8, stopOld)
			// Claim once the old writer holds the shard and has acknowledged something, while later
			// groups are in flight (were it stuck, the appenders stop after a while and the count
			// of fenced appenders below fails).
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(acked) > 0
			}, 10*time.Second, time.Millisecond)
			giveUp := time.AfterFunc(30*time.Second, func() { close(stopOld) })
			t.Cleanup(func() { giveUp.Stop() })
			time.Sleep(time.Duration(round*3) * time.Millisecond)
			o := e.opts("same-id")
			inFlight(&o)
			var newer *Store
			var err error
			for range 200 { // the claim's own fences meet the same faults: a failed claim is retried
				if newer, err = Open(context.Background(), e.objects, o); !errors.Is(err, objstoretest.ErrInjected) {
					break
				}
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = newer.Close(context.Background()) })
			appendTo(newer, "new", 4, stopNewer)
			time.Sleep(20 * time.Millisecond)
			close(stopNewer)
			wg.Wait()
			require.EqualValues(t, 8, fencedAppenders.Load(), "every appender of the old writer ends fenced")
			require.NoError(t, newer.Close(context.Background()))
			reader := e.open("reader")
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, acked)
			for _, id := range acked {
				require.NotEqualValues(t, -1, value(t, reader, id), "acknowledged: %s", id)
			}
		})
	}
}

// TestAClaimFencesAnEntryStillOnItsWayBelowTheHighestFound holds one group's entry write back
// while the two groups after it land, claims the shard, then lets the held write go: the claim
// found entries above the held position, and must have fenced it, or the old writer would
// acknowledge an entry (none of its window failed) that the new owner never replays.
func TestAClaimFencesAnEntryStillOnItsWayBelowTheHighestFound(t *testing.T) {
	ctx := context.Background()
	inner := objstoretest.NewMemory()
	var heldKey atomic.Value
	heldKey.Store("")
	held, release := make(chan struct{}, 1), make(chan struct{})
	store := &objstoretest.WriteHooks{Store: inner, BeforePut: func(key string, _ []byte) func() {
		if key != "" && heldKey.CompareAndSwap(key, "") { // the old writer's write only, not the fence
			held <- struct{}{}
			<-release
		}
		return nil
	}}
	e := newEnv(t, store)
	window := func(o *Options) { o.Writer.CommitsInFlight = 4; o.Writer.EntryObjects = true }
	old := e.open("same-id", window)
	appendIDs(t, old, e.mem, 1, "first") // the claim's fence at 1, this group at 2
	heldKey.Store(shard.EntryKey(old.Shard(), 3))
	results := make(chan error, 3)
	appendOne := func(id string) {
		go func() {
			rec := rows(e.mem, []string{id}, 2)
			_, err := old.Append(ctx, rec)
			rec.Release()
			results <- err
		}()
	}
	appendOne("held") // position 3, held back
	<-held
	landed := func(pos uint64) func() bool {
		return func() bool {
			_, err := inner.Stat(ctx, shard.EntryKey(old.Shard(), pos))
			return err == nil
		}
	}
	appendOne("after-1") // position 4
	require.Eventually(t, landed(4), 5*time.Second, time.Millisecond)
	appendOne("after-2") // position 5
	require.Eventually(t, landed(5), 5*time.Second, time.Millisecond)

	o := e.opts("same-id")
	window(&o)
	newer, err := Open(ctx, e.objects, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = newer.Close(ctx) })
	close(release)
	for range 3 {
		require.ErrorIs(t, <-results, ErrFenced, "the held group lost to a fence; the two after it follow a failure and find the new epoch")
	}
	require.NoError(t, newer.Close(ctx))
	reader := e.open("reader")
	require.EqualValues(t, 1, value(t, reader, "first"))
	require.EqualValues(t, -1, value(t, reader, "held"), "the held write lost to the fence")
	for _, id := range []string{"after-1", "after-2"} {
		// Never acknowledged, but their entries were found by the claim: replayed, as an
		// unacknowledged write may be.
		require.EqualValues(t, 2, value(t, reader, id), id)
	}
}

// manifestReads counts the listings of shard manifests (how the latest is found) that reach a
// store.
type manifestReads struct {
	objstore.Store
	n atomic.Int64
}

func (m *manifestReads) List(ctx context.Context, prefix, startAfter string, limit int) (objstore.ListPage, error) {
	if strings.Contains(prefix, "/manifest/") {
		m.n.Add(1)
	}
	return m.Store.List(ctx, prefix, startAfter, limit)
}

func TestAGroupCommitOnAnObjectStoreIsOneConditionalWrite(t *testing.T) {
	store := &manifestReads{Store: objstoretest.NewMemory()}
	e := newEnv(t, store)
	s := e.open("a", withEntryObjects)
	appendIDs(t, s, e.mem, 1, "claimed")
	before := store.n.Load()
	for i := range 20 {
		appendIDs(t, s, e.mem, int64(i), fmt.Sprintf("k%02d", i))
	}
	require.Zero(t, store.n.Load()-before, "no group read the shard manifest: the conditional write is the epoch check")

	// After a failed group write, the next groups confirm the epoch.
	faulty := objstoretest.NewFaulty(store)
	e2 := newEnv(t, faulty)
	s2 := e2.open("b", withEntryObjects, func(o *Options) { o.Writer.CommitsInFlight = 4 })
	appendIDs(t, s2, e2.mem, 1, "claimed")
	faulty.AddRule(objstoretest.Rule{Match: groupWrite(s2.Shard()), Err: objstoretest.ErrInjected, Times: 1})
	rec := rows(e2.mem, []string{"lost"}, 1)
	_, err := s2.Append(context.Background(), rec)
	rec.Release()
	require.ErrorIs(t, err, objstoretest.ErrInjected)
	before = store.n.Load()
	for i := range 6 {
		appendIDs(t, s2, e2.mem, int64(i), fmt.Sprintf("k%02d", i))
	}
	require.EqualValues(t, 4, store.n.Load()-before, "the window's groups after the failure each found the latest manifest, then none")
}

// A claim that fails before its fences are placed leaves the previous writer's promise in the
// manifest, whatever its own writer would have promised: the next claim still fences for the
// writer that may be writing unchecked. A writer's clean close withdraws its promise.
func TestAFailedClaimKeepsThePreviousWritersWindow(t *testing.T) {
	ctx := context.Background()
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	e := newEnv(t, faulty)
	old := e.open("same-id", func(o *Options) { o.Writer.CommitsInFlight = 8; o.Writer.EntryObjects = true })
	appendIDs(t, old, e.mem, 1, "a")
	m, err := shard.ReadManifest(ctx, e.objects, old.Shard())
	require.NoError(t, err)
	require.EqualValues(t, 8, m.UncheckedWindow)

	// The next claimer's writer would promise nothing (a disk store writes segment frames) and
	// its fences fail.
	faulty.AddRule(objstoretest.Rule{Match: objstoretest.MatchKeyPrefix(shard.EntryPrefix(old.Shard()), objstoretest.OpPutIfAbsent), Err: objstoretest.ErrInjected})
	_, err = Open(ctx, e.objects, e.opts("same-id"))
	require.ErrorIs(t, err, objstoretest.ErrInjected)
	m, err = shard.ReadManifest(ctx, e.objects, old.Shard())
	require.NoError(t, err)
	require.EqualValues(t, 8, m.UncheckedWindow, "the failed claim kept the previous promise")
	faulty.Reset()

	newer, err := Open(ctx, e.objects, e.opts("same-id"))
	require.NoError(t, err)
	require.NoError(t, newer.Close(ctx))
	m, err = shard.ReadManifest(ctx, e.objects, old.Shard())
	require.NoError(t, err)
	require.Zero(t, m.UncheckedWindow, "a clean close withdraws the promise")
	require.EqualValues(t, 1, value(t, e.open("reader"), "a"))
}
