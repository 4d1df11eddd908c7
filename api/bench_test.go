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
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/table"
)

const (
	p3Clients = 16
	p3Batches = 100 // per client (phases of a few seconds: steadier figures)
	p3Rounds  = 2   // the systems take turns, each round a share of the batches
	p3Batch   = 100
)

// p3Text holds the rows' content: 1 KB of word-like text per (client, batch, row), generated
// once (see p3Texts).
var p3Text = p3Texts(p3Clients * p3Batches * p3Batch)

// p3ArrowBody is client's batch of P3's load as an Arrow IPC stream (id, rollout_id, content).
func p3ArrowBody(client, batch int) []byte {
	return rolloutIPCBody(p3Batch, func(i int) (string, string, string) {
		return fmt.Sprintf("c%02d-b%03d-r%03d", client, batch, i), fmt.Sprintf("t%d", client), p3Content(client, batch, i)
	})
}

// rolloutIPCBody is an append body of n rollout rows as an Arrow IPC stream: id, rollout_id and
// content of row i from row(i).
func rolloutIPCBody(n int, row func(i int) (id, rolloutID, content string)) []byte {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "content", Type: arrow.BinaryTypes.LargeString, Nullable: true}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	for i := range n {
		id, rid, content := row(i)
		bld.Field(0).(*array.StringBuilder).Append(id)
		bld.Field(1).(*array.StringBuilder).Append(rid)
		bld.Field(2).(*array.LargeStringBuilder).Append(content)
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	_ = w.Write(rec)
	_ = w.Close()
	return buf.Bytes()
}

func p3Content(client, batch, row int) string {
	return p3Text[(client*p3Batches+batch)*p3Batch+row]
}

// BenchmarkP3AppendOverHTTP compares durable append throughput over HTTP (JSON and Arrow IPC
// bodies, 16 clients, batches of 100 1 KB rows) with PostgreSQL on this machine doing the same
// work (batched INSERT ... ON CONFLICT (id) DO UPDATE, synchronous_commit on), and point-get p99
// over HTTP with a primary-key SELECT.
func BenchmarkP3AppendOverHTTP(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		c := benchCluster(b)
		w := c.benchWorker(b)
		srv := httptest.NewServer(w.e)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: p3Clients}}
		postTo := func(url, ct string, body []byte) {
			resp, err := client.Post(url, ct, bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			// Read to the end: a body closed early costs the connection (a new dial per request).
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Fatalf("POST %s: %d", url, resp.StatusCode)
			}
		}
		post := func(path, ct string, body []byte) { postTo(srv.URL+path, ct, body) }
		post("/api/v1/rollouts", "application/json", []byte(`{"name": "json"}`))
		post("/api/v1/rollouts", "application/json", []byte(`{"name": "arrow"}`))

		jsonBody := func(client, batch int) []byte {
			recs := make([]map[string]any, p3Batch)
			for i := range recs {
				recs[i] = map[string]any{"id": fmt.Sprintf("c%02d-b%03d-r%03d", client, batch, i), "rollout_id": fmt.Sprintf("t%d", client), "content": p3Content(client, batch, i)}
			}
			data, _ := json.Marshal(map[string]any{"records": recs})
			return data
		}
		arrowBody := p3ArrowBody
		// Bodies are built before the clock starts: the figure is the server's throughput, and the
		// clients share the server's two cores.
		prebuilt := func(body func(client, batch int) []byte) [][]byte {
			out := make([][]byte, p3Clients*p3Batches)
			for cl := range p3Clients {
				for bt := range p3Batches {
					out[cl*p3Batches+bt] = body(cl, bt)
				}
			}
			return out
		}
		jsonBodies, arrowBodies := prebuilt(jsonBody), prebuilt(arrowBody)
		// The systems take turns in p3Rounds rounds, each round a share of every client's batches,
		// so that a disk whose speed drifts weighs on all of them alike; a rate is all rows over
		// all the time its phases took. Work a system defers past its acknowledgements is done
		// right after its phase, off the clock, so that it never lands in the next system's phase:
		// PostgreSQL's page writes (CHECKPOINT) and Strata's seals (the key file that makes rows
		// visible to other workers; merges do not run). The "-incl-deferred" ratios count that
		// work on each system's clock too.
		perRound := p3Batches / p3Rounds
		var elapsed, deferred [5]time.Duration // json, arrow, pg, minimal server (entries), minimal server (log)
		// run times one phase: every client's share of the round's batches; then it times the
		// system's deferred work (settle), if any, separately.
		run := func(system, round int, work func(client, batch int), settle ...func()) {
			var wg sync.WaitGroup
			start := time.Now()
			for cl := range p3Clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for bt := round * perRound; bt < (round+1)*perRound; bt++ {
						work(cl, bt)
					}
				}()
			}
			wg.Wait()
			elapsed[system] += time.Since(start)
			start = time.Now()
			for _, f := range settle {
				f()
			}
			deferred[system] += time.Since(start)
		}
		rows := float64(p3Clients * perRound * p3Rounds * p3Batch)
		rate := func(system int) float64 { return rows / elapsed[system].Seconds() }
		rateInclDeferred := func(system int) float64 { return rows / (elapsed[system] + deferred[system]).Seconds() }

		pool := c.pgPool(b)
		if _, err := pool.Exec(ctx, `CREATE TABLE p3_rollouts (id text PRIMARY KEY, rollout_id text NOT NULL, problem_id text NOT NULL,
			sequence_order int NOT NULL, role text NOT NULL, created_at timestamptz NOT NULL, content text, content_type text NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		// seal is a Strata phase's deferred work: sealing what it appended (with 80k rows a phase,
		// no size-triggered seal, every 100k rows, runs within one).
		seal := func(name string) func() {
			return func() {
				s, release, err := w.mgr.Acquire(ctx, catalog.KindRollout, name)
				if err != nil {
					b.Fatal(err)
				}
				defer release()
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		// checkpoint is PostgreSQL's: it makes its WAL durable at commit and writes the table's
		// pages later.
		checkpoint := func() {
			if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
				b.Fatal(err)
			}
		}
		minimal := startP3Minimal(b, c.data)
		for round := range p3Rounds {
			run(0, round, func(cl, bt int) {
				post("/api/v1/rollouts/json/records", "application/json", jsonBodies[cl*p3Batches+bt])
			}, seal("json"))
			run(1, round, func(cl, bt int) {
				post("/api/v1/rollouts/arrow/records", "application/vnd.apache.arrow.stream", arrowBodies[cl*p3Batches+bt])
			}, seal("arrow"))
			run(2, round, func(cl, bt int) {
				ids, rids, contents := make([]string, p3Batch), make([]string, p3Batch), make([]string, p3Batch)
				for i := range ids {
					ids[i], rids[i], contents[i] = fmt.Sprintf("c%02d-b%03d-r%03d", cl, bt, i), fmt.Sprintf("t%d", cl), p3Content(cl, bt, i)
				}
				if _, err := pool.Exec(ctx, `INSERT INTO p3_rollouts SELECT id, rid, rid, 0, 'assistant', now(), content, 'text/plain'
					FROM unnest($1::text[], $2::text[], $3::text[]) AS t(id, rid, content)
					ON CONFLICT (id) DO UPDATE SET rollout_id = EXCLUDED.rollout_id, problem_id = EXCLUDED.problem_id,
					  content = EXCLUDED.content, created_at = EXCLUDED.created_at`, ids, rids, contents); err != nil {
					b.Fatal(err)
				}
			}, checkpoint)
			for i, url := range []string{minimal.entriesURL, minimal.logURL} {
				run(3+i, round, func(cl, bt int) {
					postTo(url, "application/vnd.apache.arrow.stream", arrowBodies[cl*p3Batches+bt])
				})
			}
		}
		minimal.stop()
		jsonRate, arrowRate, pgRate, minimalEntries, minimalLog := rate(0), rate(1), rate(2), rate(3), rate(4)
		benchfmt.Report("P3-json-rows", jsonRate, "rows/s", "durable HTTP append, JSON bodies, 16 clients x 100 x 1 KB rows")
		benchfmt.Report("P3-arrow-rows", arrowRate, "rows/s", "durable HTTP append, Arrow IPC bodies, same load")
		benchfmt.Report("P3-pg-rows", pgRate, "rows/s", "PostgreSQL batched INSERT ON CONFLICT DO UPDATE, same load, synchronous_commit on")
		benchfmt.Report("P3-json-vs-pg", jsonRate/pgRate, "x", "JSON append rows/s / PostgreSQL rows/s (goal >= 1)")
		benchfmt.Report("P3-arrow-vs-pg", arrowRate/pgRate, "x", "Arrow IPC append rows/s / PostgreSQL rows/s (goal >= 2)")
		benchfmt.Report("P3-json-vs-pg-incl-deferred", rateInclDeferred(0)/rateInclDeferred(2), "x", "the same with each system's deferred work on its clock (Strata's seal, PostgreSQL's CHECKPOINT)")
		benchfmt.Report("P3-arrow-vs-pg-incl-deferred", rateInclDeferred(1)/rateInclDeferred(2), "x", "the same with each system's deferred work on its clock (Strata's seal, PostgreSQL's CHECKPOINT)")
		benchfmt.Report("P3-minimal-log-rows", minimalLog, "rows/s", "same load, a minimal server (no Arrow, catalog or memtable work) appending each group to one file + fdatasync: the MemWAL's segment protocol")
		benchfmt.Report("P3-minimal-entries-rows", minimalEntries, "rows/s", "same load, the minimal server making each group one durable object: the MemWAL's layout on stores that cannot write in place")
		benchfmt.Report("P3-arrow-vs-minimal", arrowRate/minimalLog, "x", "Arrow IPC append rows/s / the minimal server with the same durability protocol (segments)")
		benchfmt.Report("P3-minimal-log-vs-pg", minimalLog/pgRate, "x", "minimal segment-protocol server rows/s / PostgreSQL rows/s: what that protocol allows here")

		// Point gets: seal, merge and index the JSON store first (its steady state).
		mergeAndIndex(b, w, "json")
		rng := rand.New(rand.NewPCG(1, 2))
		randomID := func() string {
			return fmt.Sprintf("c%02d-b%03d-r%03d", rng.IntN(p3Clients), rng.IntN(p3Batches), rng.IntN(p3Batch))
		}
		httpGets, err := benchfmt.Time(2000, func(int) error {
			resp, err := client.Get(srv.URL + "/api/v1/rollouts/json/records/" + randomID())
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		pgGets, err := benchfmt.Time(2000, func(int) error {
			var content string
			return pool.QueryRow(ctx, `SELECT content FROM p3_rollouts WHERE id = $1`, randomID()).Scan(&content)
		})
		if err != nil {
			b.Fatal(err)
		}
		hp99, pp99 := benchfmt.Percentile(httpGets, 99), benchfmt.Percentile(pgGets, 99)
		benchfmt.Report("P3-get-p50", benchfmt.Millis(benchfmt.Percentile(httpGets, 50)), "ms", "point get over HTTP (merged, indexed store), p50")
		benchfmt.Report("P3-get-p99", benchfmt.Millis(hp99), "ms", "point get over HTTP (merged, indexed store), p99")
		benchfmt.Report("P3-pg-get-p99", benchfmt.Millis(pp99), "ms", "PostgreSQL primary-key SELECT, p99")
		benchfmt.Report("P3-get-p99-vs-pg", float64(hp99)/float64(pp99), "x", "HTTP get p99 / PostgreSQL SELECT p99")
		srv.Close()
	}
}

// mergeAndIndex brings rollout store name to its steady state: every row sealed, merged into the
// base table (compressed, as compaction leaves a table's rows: a worker's merge of fewer rows than
// the compaction target is written uncompressed until its tier is compacted) and covered by the
// key index. It returns the table's manifest.
func mergeAndIndex(b *testing.B, w *worker, name string) *table.Manifest {
	ctx := context.Background()
	s, release, err := w.mgr.Acquire(ctx, catalog.KindRollout, name)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Merge(ctx, lsm.MergeOptions{MaxGenerations: -1, MaxBytes: -1, UncompressedBelowRows: -1}, 1000); err != nil {
		b.Fatal(err)
	}
	if _, err := s.BuildKeyIndex(ctx); err != nil {
		b.Fatal(err)
	}
	m, err := s.TableManifest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

type benchClusterT struct {
	cat  *catalog.Catalog
	url  string
	data string
	// cacheBytes: the workers' process-wide object cache (0: each store's small default).
	cacheBytes int64
}

func benchCluster(b *testing.B) *benchClusterT {
	url := testenv.Database(b)
	cat, err := catalog.Open(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cat.Close)
	return &benchClusterT{cat: cat, url: url, data: b.TempDir()}
}

func (c *benchClusterT) benchWorker(b *testing.B, mod ...func(*api.Deps)) *worker {
	inner := &cluster{t: b, cat: c.cat, dataDir: c.data, mem: memory.DefaultAllocator, cacheBytes: c.cacheBytes}
	return inner.worker("bench", mod...)
}

func (c *benchClusterT) pgPool(b *testing.B) *pgxpool.Pool {
	pool, err := pgxpool.New(context.Background(), c.url+"&pool_max_conns=20")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}
