// P12: datagen stores — event append throughput over HTTP against P3's JSON rollout load on the
// same server in the same run, and item-fold and overview latency on a merged 1M-event store.
package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/datagen"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/lsm"
)

// p12Merge merges everything pending, compressed: this store is never compacted, and its
// fragments are read as compaction would leave them (a worker's merge under the compaction
// target is uncompressed until then).
var p12Merge = lsm.MergeOptions{MaxGenerations: -1, MaxBytes: -1, UncompressedBelowRows: -1}

const (
	p12Clients  = 16
	p12Batches  = 40 // per client
	p12Batch    = 100
	p12Items    = 1000 // items of the fold store, p12ItemSize events each: 1M events
	p12ItemSize = 1000
)

// p12Events is one client's batch: a new item's ITEM_CREATED and 99 FIELD_SETs of 256 B strings.
func p12Events(client, batch int) []byte {
	item := fmt.Sprintf("c%02d-b%03d", client, batch)
	value := strings.Repeat("v", 256)
	var buf bytes.Buffer
	buf.WriteString(`{"events":[`)
	for i := range p12Batch {
		if i > 0 {
			buf.WriteByte(',')
		}
		typ, extra := "FIELD_SET", fmt.Sprintf(`,"step_name":"gen","step_kind":"leaf","step_index":%d,"field_name":"f%d","field_type":"str","codec_version":1,"value":{"kind":"str","value":%q}`, i, i, value)
		if i == 0 {
			typ, extra = "ITEM_CREATED", ""
		}
		fmt.Fprintf(&buf, `{"event_id":%q,"item_id":%q,"root_item_id":%q,"item_seq":%d,"checkpoint_id":"cp-%d","event_type":%q,"run_id":"r","writer_epoch":"w","schema_version":2%s}`,
			datagen.EventID(item, fmt.Sprint("cp-", i), 0), item, item, i, i, typ, extra)
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}

// BenchmarkP12Datagen: P12-events-rows (16 clients x 100 events of 256 B values, each append
// sealed as datagen appends are) with its ratio to P3's JSON load run on the same server; then
// P12-fold-p99 (items of 1,000 events in a merged, indexed 1M-event store) and P12-overview-p99
// (warm: the incremental state up to date; its first build on the same store is reported too).
func BenchmarkP12Datagen(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		c := benchCluster(b)
		w := c.benchWorker(b)
		srv := httptest.NewServer(w.e)
		b.Cleanup(srv.Close)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: p12Clients}}
		call := func(method, path string, body []byte, want int) []byte {
			req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
			}
			return data
		}
		call("POST", "/api/v1/datagen", []byte(`{"name": "events"}`), http.StatusCreated)
		call("POST", "/api/v1/rollouts", []byte(`{"name": "json"}`), http.StatusCreated)
		eventBodies, rolloutBodies := make([][]byte, p12Clients*p12Batches), make([][]byte, p12Clients*p12Batches)
		for cl := range p12Clients {
			for bt := range p12Batches {
				eventBodies[cl*p12Batches+bt] = p12Events(cl, bt)
				recs := make([]map[string]any, p3Batch)
				for i := range recs {
					recs[i] = map[string]any{"id": fmt.Sprintf("c%02d-b%03d-r%03d", cl, bt, i), "rollout_id": fmt.Sprintf("t%d", cl), "content": p3Content(cl, bt, i)}
				}
				rolloutBodies[cl*p12Batches+bt], _ = json.Marshal(map[string]any{"records": recs})
			}
		}
		run := func(path string, bodies [][]byte) float64 {
			var wg sync.WaitGroup
			start := time.Now()
			for cl := range p12Clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for bt := range p12Batches {
						call("POST", path, bodies[cl*p12Batches+bt], http.StatusCreated)
					}
				}()
			}
			wg.Wait()
			return float64(p12Clients*p12Batches*p12Batch) / time.Since(start).Seconds()
		}
		events := run("/api/v1/datagen/events/events", eventBodies)
		rollouts := run("/api/v1/rollouts/json/records", rolloutBodies)
		benchfmt.Report("P12-events-rows", events, "rows/s", "datagen event appends over HTTP (16 clients x 100 events of 256 B values; every append sealed before it is answered)")
		benchfmt.Report("P12-events-vs-p3-json", events/rollouts, "x", fmt.Sprintf("event rows/s / P3's JSON rollout load on the same server (%.0f rows/s of 1 KB, unsealed)", rollouts))

		// The fold store: 1M events, built in process (1,000 events per item), merged and indexed.
		call("POST", "/api/v1/datagen", []byte(`{"name": "fold"}`), http.StatusCreated)
		s, release, err := w.mgr.Acquire(ctx, catalog.KindDatagen, "fold")
		if err != nil {
			b.Fatal(err)
		}
		log := datagen.LogOf(s)
		value := strings.Repeat("v", 64)
		for it := 0; it < p12Items; it += 10 {
			var batch []datagen.Event
			for j := it; j < it+10; j++ {
				batch = append(batch, p12Item(j, value)...)
			}
			rows, err := datagen.NewBatch(batch, time.Now(), memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			_, err = log.Append(ctx, rows, false, func(rec arrow.RecordBatch) error {
				_, err := s.Append(ctx, rec)
				return err
			})
			rows.Release()
			if err != nil {
				b.Fatal(err)
			}
			if (it/10)%10 == 9 {
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := s.MergeShard(ctx, s.Shard(), p12Merge); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Merge(ctx, p12Merge, 100); err != nil {
			b.Fatal(err)
		}
		if _, err := s.BuildKeyIndex(ctx); err != nil {
			b.Fatal(err)
		}
		release()

		rng := rand.New(rand.NewPCG(12, 1))
		fold := func(int) error {
			call("GET", fmt.Sprintf("/api/v1/datagen/fold/items/item-%04d", rng.IntN(p12Items)), nil, http.StatusOK)
			return nil
		}
		_, _ = benchfmt.Time(20, fold) // warm
		// The first folds after the build run while the runtime hands the build's memory (several
		// hundred MB) back to the kernel and faults some of it in again: reported on their own.
		afterBuild, err := benchfmt.Time(200, fold)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = benchfmt.Time(400, fold) // until the heap has settled
		stopProfile := benchfmt.ProfileCPU("p12-fold.cpu.pb.gz")
		stopAllocs := benchfmt.ProfileAllocs("p12-fold.allocs.pb.gz")
		times, err := benchfmt.Time(200, fold)
		stopAllocs()
		stopProfile()
		if err != nil {
			b.Fatal(err)
		}
		benchfmt.Report("P12-fold-p50", benchfmt.Millis(benchfmt.Percentile(times, 50)), "ms", "item fold over HTTP, items of 1,000 events in a merged 1M-event store, p50")
		benchfmt.Report("P12-fold-p99", benchfmt.Millis(benchfmt.Percentile(times, 99)), "ms", "the same, p99, on a settled server (after 620 folds) (goal <= 10 ms)")
		benchfmt.Report("P12-fold-after-build-p99", benchfmt.Millis(benchfmt.Percentile(afterBuild, 99)), "ms",
			fmt.Sprintf("the same, p99 of the 200 folds right after the store was built (p50 %.2f ms): what P12-fold-p99 measured before it waited for a settled heap", benchfmt.Millis(benchfmt.Percentile(afterBuild, 50))))
		s, release, err = w.mgr.Acquire(ctx, catalog.KindDatagen, "fold")
		if err != nil {
			b.Fatal(err)
		}
		inproc, err := benchfmt.Time(200, func(int) error {
			_, err := datagen.LogOf(s).Fold(ctx, fmt.Sprintf("item-%04d", rng.IntN(p12Items)), false)
			return err
		})
		release()
		if err != nil {
			b.Fatal(err)
		}
		benchfmt.Report("P12-fold-inprocess-p99", benchfmt.Millis(benchfmt.Percentile(inproc, 99)), "ms",
			fmt.Sprintf("the same fold without HTTP and JSON (p50 %.2f ms): what the read and the fold cost", benchfmt.Millis(benchfmt.Percentile(inproc, 50))))

		start := time.Now()
		call("GET", "/api/v1/datagen/fold/overview", nil, http.StatusOK)
		benchfmt.Report("P12-overview-build", benchfmt.Millis(time.Since(start)), "ms", "the overview's first call on a worker: one ordered read of the 1M-event log")
		times, err = benchfmt.Time(200, func(int) error { call("GET", "/api/v1/datagen/fold/overview", nil, http.StatusOK); return nil })
		if err != nil {
			b.Fatal(err)
		}
		benchfmt.Report("P12-overview-p99", benchfmt.Millis(benchfmt.Percentile(times, 99)), "ms", "overview over HTTP at 1M events, state up to date, p99 (goal <= 50 ms)")
		// With appends between calls: each call folds again only the items that changed.
		times = times[:0]
		for i := range 50 {
			call("POST", "/api/v1/datagen/fold/events", p12Events(99, i), http.StatusCreated)
			start := time.Now()
			call("GET", "/api/v1/datagen/fold/overview", nil, http.StatusOK)
			times = append(times, time.Since(start))
		}
		benchfmt.Report("P12-overview-after-append-p99", benchfmt.Millis(benchfmt.Percentile(times, 99)), "ms", "an append of a new 100-event item, then the overview, p99 (the overview folds that item again)")
	}
}

// p12Item is item j's 1,000 events: created, then FIELD_SET / STEP_COMPLETED pairs.
func p12Item(j int, value string) []datagen.Event {
	item := fmt.Sprintf("item-%04d", j)
	out := make([]datagen.Event, 0, p12ItemSize)
	str := func(s string) *string { return &s }
	for seq := range p12ItemSize {
		cp := fmt.Sprintf("cp-%d", seq/2)
		e := datagen.Event{EventID: datagen.EventID(item, cp, uint32(seq%2)), ItemID: item, RootItemID: item, ItemSeq: int64(seq),
			CheckpointID: cp, RunID: "r", WriterEpoch: "w", SchemaVersion: datagen.SchemaVersion}
		idx := int64(seq / 2)
		switch {
		case seq == 0:
			e.EventType = datagen.ItemCreated
		case seq%2 == 1:
			e.EventType, e.StepName, e.StepKind, e.StepIndex = datagen.FieldSet, str("gen"), str("leaf"), &idx
			cv := int32(1)
			e.FieldName, e.FieldType, e.CodecVersion = str(fmt.Sprint("f", seq%20)), str("str"), &cv
			v, _ := json.Marshal(value)
			e.Value = &datagen.Value{Kind: datagen.KindStr, Value: v}
		default:
			e.EventType, e.StepName, e.StepKind, e.StepIndex = datagen.StepCompleted, str("gen"), str("leaf"), &idx
		}
		out = append(out, e)
	}
	return out
}
