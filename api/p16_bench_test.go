//go:build duckdb_arrow && sqlbench

// P16 (built with -tags duckdb_arrow,sqlbench, as make bench does: the API's test binary links
// DuckDB only then): SQL over a store and the Strata UI, on a 1M-row rollout store (~600 B rows) with 5% of its
// rows in the WAL: an aggregate through POST …/query against DuckDB reading the store's fragments
// directly, the UI record browser's first page, and the memory a query that sorts 1 GB adds.
package api_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the DuckDB baseline, reading the fragments itself

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/sqlquery/duckrun"
	"github.com/strata-store/strata/webui"
)

// p16Query is the aggregate both sides run.
const p16Query = "SELECT rollout_id, count(*) AS n FROM %s GROUP BY rollout_id ORDER BY n DESC, rollout_id LIMIT 10"

func BenchmarkP16SQLAndUI(b *testing.B) {
	if !benchfmt.Wanted("P16") {
		b.Skip("P16 not selected")
	}
	for b.Loop() {
		c := benchCluster(b)
		const memLimit = 512 << 20
		runner, err := duckrun.New(duckrun.Limits{MemoryBytes: memLimit, Threads: runtime.GOMAXPROCS(0), SpillDir: b.TempDir()}, nil)
		if err != nil {
			b.Fatal(err)
		}
		w := c.benchWorker(b, func(d *api.Deps) { d.SQL = runner })
		if err := webui.Register(w.e, webui.Options{API: w.e}); err != nil {
			b.Fatal(err)
		}
		st := newMergedStoreServer(b, w)
		st.drain(st.do("POST", "/api/v1/rollouts", "application/json", "", []byte(`{"name":"p16"}`)))
		texts := p3Texts(1000)
		merged := p9Rows * 95 / 100
		for batch := range merged / p9Batch {
			st.drain(st.do("POST", "/api/v1/rollouts/p16/records", "application/vnd.apache.arrow.stream", "", p9Body(batch, texts)))
		}
		manifest := mergeAndIndex(b, w, "p16")
		for batch := merged / p9Batch; batch < p9Rows/p9Batch; batch++ { // 5% more, pending in the WAL
			st.drain(st.do("POST", "/api/v1/rollouts/p16/records", "application/vnd.apache.arrow.stream", "", p9Body(batch, texts)))
		}
		st.drain(st.do("POST", "/api/v1/rollouts/p16/flush", "", "", nil))
		fragments := p9FragmentFiles(b, c.data, manifest.Fragments)

		// DuckDB over the fragments (95% of the rows) against the same query through /query.
		db, err := sql.Open("duckdb", "?threads="+strconv.Itoa(runtime.GOMAXPROCS(0)))
		if err != nil {
			b.Fatal(err)
		}
		list := "read_parquet(['" + strings.Join(fragments, "','") + "'], union_by_name=true)"
		direct := median3(b, func() {
			rows, err := db.Query(fmt.Sprintf(p16Query, list))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if err := rows.Close(); err != nil || n != 10 {
				b.Fatalf("DuckDB: %d rows, %v", n, err)
			}
		})
		_ = db.Close()
		body := []byte(fmt.Sprintf(`{"sql": %q}`, fmt.Sprintf(p16Query, "t")))
		var answer api.QueryResponse
		through := median3(b, func() {
			resp := st.do("POST", "/api/v1/rollouts/p16/query", "application/json", "", body)
			answer = api.QueryResponse{}
			if err := decodeJSON(resp, &answer); err != nil || answer.RowCount != 10 {
				b.Fatalf("/query: %+v %v", answer, err)
			}
		})
		benchfmt.Report("P16-duckdb-direct-ms", ms(direct), "ms", "DuckDB reading the store's 950k merged rows from its fragment files (group by rollout_id, top 10)")
		benchfmt.Report("P16-query-ms", ms(through), "ms", "the same aggregate through POST /query over all 1M rows (snapshot of base + 5% WAL, newest per id)")
		benchfmt.Report("P16-sql-vs-duckdb", direct.Seconds()/through.Seconds(), "x", "DuckDB on the fragments / the query through /query (goal >= 0.7)")

		// The record browser's first page: time to its first byte.
		var firsts []time.Duration
		for range 20 {
			start := time.Now()
			resp := st.do("GET", "/ui/s/rollout/p16/records", "", "", nil)
			firsts = append(firsts, time.Since(start))
			st.drain(resp)
		}
		slices.Sort(firsts)
		benchfmt.Report("P16-ui-first-page-p95", ms(firsts[len(firsts)*95/100-1]), "ms", "time to first byte of the UI record browser's first page of the 1M-row store (goal <= 150)")

		// A query that sorts ~1 GB (1M rows of 2 x 500 B): RSS growth while it runs.
		runtime.GC()
		before := rssBytes()
		stop := sampleRSS()
		sortBody := []byte(`{"sql": "SELECT max(r) FROM (SELECT row_number() OVER (ORDER BY content || content) AS r FROM t)"}`)
		start := time.Now()
		st.drain(st.do("POST", "/api/v1/rollouts/p16/query", "application/json", "", sortBody))
		took := time.Since(start)
		grown := float64(stop()-before) / (1 << 20)
		benchfmt.Report("P16-query-rss", grown, "MiB", fmt.Sprintf("RSS growth during a query sorting ~1 GB (%.1f s) with --sql-memory-bytes %d MiB (goal <= limit + 64 MiB)", took.Seconds(), memLimit>>20))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// median3 is the median time of three runs of fn (after one unmeasured run).
func median3(b *testing.B, fn func()) time.Duration {
	fn()
	var ts []time.Duration
	for range 3 {
		start := time.Now()
		fn()
		ts = append(ts, time.Since(start))
	}
	slices.Sort(ts)
	return ts[1]
}

func decodeJSON(resp *http.Response, out any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// rssBytes is the process's resident set size (0 when /proc cannot tell).
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, rss int64
	_, _ = fmt.Sscan(string(data), &size, &rss)
	return rss * int64(os.Getpagesize())
}

// sampleRSS samples the RSS every 10 ms until stop, which returns the highest seen.
func sampleRSS() func() int64 {
	var peak int64 // written by the sampler only; read after it has returned
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, rssBytes())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return peak
	}
}
