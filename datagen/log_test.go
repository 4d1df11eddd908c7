package datagen

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// modelEnv is one object store written by several simulated processes.
type modelEnv struct {
	t       *testing.T
	objects objstore.Store
	mem     *memory.CheckedAllocator
	clock   *hlc.Clock
	stores  map[string]*lsm.Store
	dead    []*lsm.Store // crashed processes' handles, closed at the end
}

func (e *modelEnv) open(instance string) *lsm.Store {
	s, err := lsm.Create(context.Background(), e.objects, kinds.DatagenSchema, kinds.DatagenKeyColumn,
		lsm.Options{Instance: instance, Allocator: e.mem, Clock: e.clock, IOTimeout: 10 * time.Second})
	require.NoError(e.t, err)
	e.stores[instance] = s
	return s
}

// crash leaves instance's handle as a killed process does (nothing sealed) and starts its
// successor, which claims the shard and replays the WAL.
func (e *modelEnv) crash(instance string) {
	e.dead = append(e.dead, e.stores[instance])
	e.open(instance)
}

// genItem writes one item's events in order, a batch at a time.
type genItem struct {
	id      string
	seq     int64
	cps     int
	started bool
	ended   bool
}

func (g *genItem) event(cp string, ord uint32, typ string) Event {
	root, _, _ := cutRoot(g.id)
	e := Event{EventID: EventID(g.id, cp, ord), ItemID: g.id, RootItemID: root, ItemSeq: g.seq, CheckpointID: cp, EventType: typ,
		RunID: "run-1", WriterEpoch: "w", SchemaVersion: SchemaVersion}
	if root != g.id {
		p := g.id[:len(g.id)-len("/fan:0")]
		e.ParentItemID = &p
	}
	g.seq++
	return e
}

func cutRoot(id string) (string, string, bool) {
	for i := range id {
		if id[i] == '/' {
			return id[:i], id[i:], true
		}
	}
	return id, "", false
}

func ptr[T any](v T) *T { return &v }

// next is the item's next batch (checkpoint: an atomic step boundary); nil when it has ended.
func (g *genItem) next(rng *rand.Rand) (batch []Event, checkpoint bool) {
	if g.ended {
		return nil, false
	}
	if !g.started {
		g.started = true
		e := g.event("created", 0, ItemCreated)
		e.Status = ptr(StatusRunning)
		return []Event{e}, false
	}
	step := fmt.Sprintf("s%d", g.cps%4)
	at := func(e *Event) {
		e.StepName, e.StepKind, e.StepIndex, e.EnclosingStep = ptr(step), ptr("leaf"), ptr(int64(g.cps)), ptr("main")
	}
	switch r := rng.IntN(10); {
	case r < 6:
		cp := fmt.Sprintf("cp-%d", g.cps)
		g.cps++
		n := rng.IntN(3)
		for i := range n {
			typ, name := FieldSet, "answer"
			if i == 1 {
				typ, name = FieldAppend, "log"
			}
			e := g.event(cp, uint32(i), typ)
			at(&e)
			e.FieldName, e.FieldType, e.CodecVersion = ptr(name), ptr("int"), ptr(int32(1))
			e.Value = &Value{Kind: KindInt, Value: json.RawMessage(fmt.Sprint(rng.IntN(1000)))}
			if rng.IntN(5) == 0 && typ == FieldSet {
				e.FieldName, e.FieldType = ptr("image"), ptr("png")
				e.Value = &Value{Kind: KindBlob, Bytes: []byte(fmt.Sprintf("blob-%d", rng.IntN(100)))}
			}
			batch = append(batch, e)
		}
		done := g.event(cp, uint32(n), StepCompleted)
		at(&done)
		return append(batch, done), true
	case r < 8:
		e := g.event(fmt.Sprintf("fail-%d", g.seq), 0, Failed)
		at(&e)
		e.ErrorType, e.Status = ptr([]string{"ValueError", "Timeout"}[rng.IntN(2)]), ptr(StatusFailed)
		return []Event{e}, false
	case r < 9:
		e := g.event(fmt.Sprintf("start-%d", g.seq), 0, StepStarted)
		at(&e)
		e.StepKind = ptr("sequence")
		return []Event{e}, false
	default:
		g.ended = true
		e := g.event("terminal", 0, Terminal)
		e.Status = ptr([]string{StatusCompleted, StatusFiltered}[rng.IntN(2)])
		return []Event{e}, false
	}
}

// modelOverview is the overview computed the simplest way: fold every item of the model.
func modelOverview(t *testing.T, byItem map[string]map[string]Event) *Overview {
	// Independent of the incremental code: each item's Fold and Failures.
	o := &Overview{FailuresByErrorType: map[string]int{}, FailuresByRun: map[string]*FailureBucket{}, CompletedSteps: map[string]int{}}
	roots := map[string]map[string]bool{}
	for _, evs := range byItem {
		all := slices.Collect(mapsValues(evs))
		item, err := Fold(all)
		require.NoError(t, err)
		if item == nil {
			continue
		}
		for _, c := range item.Trajectory {
			o.CompletedSteps[c.StepName]++
		}
		failures, err := Failures(all)
		require.NoError(t, err)
		for _, f := range failures {
			o.Failures++
			o.FailuresByErrorType[f.ErrorType]++
			b := o.FailuresByRun[f.RunID]
			if b == nil {
				b = &FailureBucket{FailuresByErrorType: map[string]int{}}
				o.FailuresByRun[f.RunID] = b
				roots[f.RunID] = map[string]bool{}
			}
			b.Failures++
			b.FailuresByErrorType[f.ErrorType]++
			roots[f.RunID][item.RootItemID] = true
		}
		if item.ParentItemID != nil {
			continue
		}
		o.Items++
		switch item.Status {
		case StatusCompleted:
			o.Completed++
		case StatusFiltered:
			o.Filtered++
		default:
			o.Running++
		}
	}
	for run, b := range o.FailuresByRun {
		r := slices.Sorted(func(yield func(string) bool) {
			for k := range roots[run] {
				if !yield(k) {
					return
				}
			}
		})
		b.SampleRootItemIDs = r[:min(len(r), FailureSample)]
	}
	return o
}

func mapsValues(m map[string]Event) func(func(Event) bool) {
	return func(yield func(Event) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// A randomized model of the datagen log: items written in batches from two processes (shards),
// retried batches, seals, merges, index builds, compactions and crashes with WAL replay; at
// every check a third process's folds, failures, histories, root statuses and overview match
// those computed from the model's events alone.
func TestRandomizedFoldModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STRATA_TEST_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (STRATA_TEST_SEED reruns it)", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	ctx := context.Background()
	e := &modelEnv{t: t, objects: objstoretest.NewMemory(), mem: memory.NewCheckedAllocator(memory.NewGoAllocator()),
		clock: hlc.New(nil), stores: map[string]*lsm.Store{}}
	writers := []string{"a", "b"}
	for _, w := range writers {
		e.open(w)
	}
	reader := e.open("reader")
	t.Cleanup(func() {
		for _, s := range e.stores {
			_ = s.Close(ctx)
		}
		for _, s := range e.dead {
			_ = s.Close(ctx)
		}
		e.mem.AssertSize(t, 0)
	})

	var items []*genItem
	for i := range 8 {
		items = append(items, &genItem{id: fmt.Sprint(i)})
	}
	items = append(items, &genItem{id: "0/fan:0"}, &genItem{id: "0/fan:1"}, &genItem{id: "3/fan:0"})
	model := map[string]map[string]Event{} // item -> event id -> event
	var sent [][]Event
	checks, appended, blobs := 0, 0, 0
	appendTo := func(s *lsm.Store, batch []Event, checkpoint bool, seal bool) {
		b, err := NewBatch(batch, time.Now(), e.mem)
		require.NoError(t, err)
		defer b.Release()
		_, err = LogOf(s).Append(ctx, b, checkpoint, func(rec arrow.RecordBatch) error {
			if _, err := s.Append(ctx, rec); err != nil {
				return err
			}
			if seal {
				return s.Flush(ctx)
			}
			return nil
		})
		require.NoError(t, err)
		appended += len(batch)
		for _, ev := range batch {
			if ev.Value != nil && ev.Value.Kind == KindBlob {
				blobs++
			}
			if model[ev.ItemID] == nil {
				model[ev.ItemID] = map[string]Event{}
			}
			model[ev.ItemID][ev.EventID] = ev
		}
	}
	check := func() {
		for _, w := range writers {
			require.NoError(t, e.stores[w].Flush(ctx))
		}
		l := LogOf(reader)
		roots := map[string]bool{}
		for _, it := range items {
			want, err := Fold(slices.Collect(mapsValues(model[it.id])))
			require.NoError(t, err)
			got, err := l.Fold(ctx, it.id, true)
			require.NoError(t, err)
			require.Equal(t, want, got, "item %s (seed %d)", it.id, seed)
			wantF, err := Failures(slices.Collect(mapsValues(model[it.id])))
			require.NoError(t, err)
			gotF, err := l.ItemFailures(ctx, it.id)
			require.NoError(t, err)
			require.Equal(t, wantF, gotF, "failures of %s", it.id)
			root, _, _ := cutRoot(it.id)
			roots[root] = true
		}
		for root := range roots {
			evs, err := l.RootEvents(ctx, root)
			require.NoError(t, err)
			n := 0
			for item, m := range model {
				if r, _, _ := cutRoot(item); r == root {
					n += len(m)
				}
			}
			require.Len(t, evs, n, "root %s's history", root)
		}
		got, err := l.Overview(ctx)
		require.NoError(t, err)
		require.Equal(t, modelOverview(t, model), got, "overview (seed %d)", seed)
		checks++
	}
	for step := range 250 {
		switch r := rng.IntN(100); {
		case r < 60:
			it := items[rng.IntN(len(items))]
			batch, checkpoint := it.next(rng)
			if batch != nil {
				appendTo(e.stores[writers[rng.IntN(2)]], batch, checkpoint, rng.IntN(3) > 0)
				sent = append(sent, batch)
			}
		case r < 68 && len(sent) > 0: // a retry of an earlier batch: idempotent
			// The API seals every datagen append before answering it, so the original of a
			// retried batch is visible to every writer; unsealed appends above stand for the
			// moment before that seal, which no retry can observe.
			for _, w := range writers {
				require.NoError(t, e.stores[w].Flush(ctx))
			}
			b := sent[rng.IntN(len(sent))]
			appendTo(e.stores[writers[rng.IntN(2)]], b, false, true)
		case r < 78:
			w := e.stores[writers[rng.IntN(2)]]
			require.NoError(t, w.Flush(ctx))
			_, err := w.MergeShard(ctx, w.Shard(), lsm.MergeOptions{})
			require.NoError(t, err)
		case r < 82:
			_, err := reader.BuildKeyIndex(ctx)
			require.NoError(t, err)
		case r < 85:
			_, err := reader.Compact(ctx, lsm.CompactOptions{})
			require.NoError(t, err)
		case r < 90:
			e.crash(writers[rng.IntN(2)])
		default:
			check()
		}
		_ = step
	}
	check()
	t.Logf("%d events appended (%d blobs), %d checks", appended, blobs, checks)
	require.Greater(t, checks, 5)
	require.Greater(t, blobs, 0)
}
