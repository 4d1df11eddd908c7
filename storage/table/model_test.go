package table

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// model is the reference: the newest write per key.
type model map[string]row

func (m model) apply(rows []row) {
	for _, r := range rows {
		if cur, ok := m[r.id]; !ok || r.seq > cur.seq {
			m[r.id] = r
		}
	}
}

func (m model) live() map[string]row {
	out := map[string]row{}
	for id, r := range m {
		if !r.tombstone {
			out[id] = row{id: id, value: r.value, payload: r.payload, seq: r.seq}
		}
	}
	return out
}

// TestRandomizedModel drives a table with random upserts (including stale and deleting rows),
// index builds, compactions and cleanups, injecting crashes between the data writes and the
// commit, and checks it against an in-memory model and CheckTable after every step.
func TestRandomizedModel(t *testing.T) {
	steps := 2000 // STRATA_MODEL_STEPS overrides
	if raceEnabled || testing.Short() {
		steps = 400
	}
	if n, err := strconv.Atoi(os.Getenv("STRATA_MODEL_STEPS")); err == nil && n > 0 {
		steps = n
	}
	runRandomizedModel(t, objstoretest.NewMemory(), steps)
}

// The same model, crashes included, against a real S3 server (fewer steps: each is a few round
// trips to it).
func TestRandomizedModelOnS3(t *testing.T) {
	skipUnderRace(t)
	s, err := objstore.Open(context.Background(), testenv.S3(t))
	require.NoError(t, err)
	runRandomizedModel(t, s, 120)
}

func runRandomizedModel(t *testing.T, base objstore.Store, steps int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewFaulty(base)
	clock := time.Now()
	opts := Options{Allocator: mem, Now: func() time.Time { return clock }}
	tbl, err := Create(ctx, store, testSchema, "id", opts)
	require.NoError(t, err)
	want := model{}
	var seq uint64 = 1000
	used := map[uint64]bool{}
	crashes, commits := 0, 0

	for step := range steps {
		clock = clock.Add(time.Minute)
		before, err := tbl.Latest(ctx)
		require.NoError(t, err)
		crash := rng.IntN(6) == 0
		if crash {
			store.CrashAfterWrites(rng.IntN(4))
		}
		var rows []row
		op := rng.IntN(20)
		switch {
		case op < 13: // upsert, sometimes with stale rows and deletes
			n := 1 + rng.IntN(12)
			for range n {
				seq++
				s := seq
				if rng.IntN(5) == 0 {
					s -= uint64(rng.IntN(50)) // an old write arriving late
				}
				for used[s] { // sequence numbers are unique, as the clock makes them
					s--
				}
				used[s] = true
				rows = append(rows, row{id: fmt.Sprintf("k%02d", rng.IntN(60)), value: int64(rng.IntN(1000)),
					payload: fmt.Sprint(step), seq: s, tombstone: rng.IntN(8) == 0})
			}
			rec := batch(mem, rows)
			_, err = tbl.Upsert(ctx, rec, UpsertOptions{})
			rec.Release()
		case op < 15:
			_, err = tbl.BuildKeyIndex(ctx, IndexOptions{Rebuild: rng.IntN(3) == 0})
		case op < 18:
			_, err = tbl.Compact(ctx, CompactionConfig{MinFragments: 2 + rng.IntN(3), TargetRowsPerFragment: int64(10 + rng.IntN(40)), MaxSourceFragments: 4 + rng.IntN(12)})
		default:
			_, err = tbl.CleanupVersions(ctx, CleanupOptions{KeepLatest: 1 + rng.IntN(3), OlderThan: time.Duration(rng.IntN(5)) * time.Minute, Grace: 3 * time.Minute})
		}
		if crash {
			// The process "died": a new one opens the table. Whether the operation landed is
			// decided by one thing only, the manifest commit.
			crashed := store.Crashed()
			store.Reset()
			if err != nil {
				require.True(t, errors.Is(err, objstoretest.ErrCrashed), "step %d: %v", step, err)
			}
			if crashed {
				crashes++
			}
			tbl, err = Open(ctx, store, opts)
			require.NoError(t, err)
		} else {
			require.NoError(t, err, "step %d", step)
		}
		after, err := tbl.Latest(ctx)
		require.NoError(t, err)
		if rows != nil && after.Version > before.Version {
			want.apply(rows)
			commits++
		}
		require.Equal(t, want.live(), scanAll(t, tbl, after), "step %d (op %d)", step, op)
		require.NoError(t, tbl.Check(ctx, after), "step %d", step)
		if step%250 == 0 {
			segs := 0
			if after.KeyIndex != nil {
				segs = len(after.KeyIndex.Runs)
			}
			t.Logf("step %d: v%d, %d fragments, %d index segments", step, after.Version, len(after.Fragments), segs)
		}
	}
	t.Logf("%d steps, %d crashes, %d upsert commits", steps, crashes, commits)
	require.Positive(t, crashes)
}

// Two upserters and a compactor on one table: nothing lost, nothing duplicated.
func TestConcurrentUpsertersAndACompactor(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	tbl := newTestTable(t, store, mem)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	clock := hlc.New(nil)
	var mu sync.Mutex
	want := model{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := Open(ctx, store, Options{Allocator: mem})
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 60 {
				var rows []row
				for j := range 5 {
					rows = append(rows, row{id: fmt.Sprintf("k%03d", (i*5+j+w*3)%90), value: int64(w*1000 + i), seq: clock.Next()})
				}
				rec := batch(mem, rows)
				_, err := h.Upsert(ctx, rec, UpsertOptions{})
				rec.Release()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want.apply(rows)
				mu.Unlock()
			}
		}()
	}
	compactions := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		h, _ := Open(ctx, store, Options{Allocator: mem})
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := h.Compact(ctx, CompactionConfig{MinFragments: 2, TargetRowsPerFragment: 40})
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Error(err)
				return
			}
			if res.FragmentsAdded > 0 {
				compactions++
			}
			time.Sleep(time.Millisecond) // a compactor runs now and then, not in a busy loop
		}
	}()
	go func() {
		// Stop the compactor once both upserters are done.
		for {
			mu.Lock()
			n := len(want)
			mu.Unlock()
			if n >= 90 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		close(stop)
	}()
	wg.Wait()
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, want.live(), scanAll(t, tbl, m))
	require.NoError(t, tbl.Check(ctx, m))
	require.True(t, m.IndexCoversAll())
	t.Logf("%d compactions ran alongside, table at v%d", compactions, m.Version)
}
