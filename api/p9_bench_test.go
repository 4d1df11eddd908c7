// The merged 1M-row store P8 and P9 read, and P9: a full keyset scan of it over HTTP (Arrow IPC
// and JSON pages of 10,000 rows) against DuckDB reading the same Parquet fragments in key order,
// in one run.
package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/table"
)

const (
	p9Rows      = 1_000_000
	p9Batch     = 10_000 // rows per append and per scan page
	p9TextBytes = 500
)

// mergedStore is a rollout store of p9Rows rows (~600 B each) appended over HTTP, merged into the
// base table and indexed: the steady state P8 and P9 read.
type mergedStore struct {
	cluster  *benchClusterT
	worker   *worker
	srv      *httptest.Server
	manifest *table.Manifest
	// do sends a request (fatal unless it answers 2xx); drain reads and closes a response.
	do    func(method, path, ct, accept string, body []byte) *http.Response
	drain func(*http.Response)
}

func newMergedStore(b *testing.B, name string) *mergedStore {
	c := benchCluster(b)
	w := c.benchWorker(b)
	st := newMergedStoreServer(b, w)
	st.cluster = c
	st.drain(st.do("POST", "/api/v1/rollouts", "application/json", "", []byte(`{"name":"`+name+`"}`)))
	texts := p3Texts(1000)
	for batch := range p9Rows / p9Batch {
		st.drain(st.do("POST", "/api/v1/rollouts/"+name+"/records", "application/vnd.apache.arrow.stream", "", p9Body(batch, texts)))
	}
	st.manifest = mergeAndIndex(b, w, name)
	return st
}

// newMergedStoreServer serves worker w over HTTP (a test server, a client of 16 connections) with
// no store created yet.
func newMergedStoreServer(b *testing.B, w *worker) *mergedStore {
	srv := httptest.NewServer(w.e)
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	do := func(method, path, ct, accept string, body []byte) *http.Response {
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode/100 != 2 {
			msg, _ := io.ReadAll(resp.Body)
			b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, msg)
		}
		return resp
	}
	drain := func(resp *http.Response) { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }
	return &mergedStore{worker: w, srv: srv, do: do, drain: drain}
}

// BenchmarkP9ScanVsDuckDB loads 1M rows of ~600 B (id, rollout_id, 500 B of text) into one
// rollout store, merges and indexes it, then times a full keyset scan over HTTP (every page of
// 10,000 rows, Arrow IPC and JSON) and DuckDB (npm @duckdb/node-api, all cores) streaming the same
// fragments' rows in id order.
func BenchmarkP9ScanVsDuckDB(b *testing.B) {
	duckDir := os.Getenv("STRATA_DUCKDB_DIR")
	if duckDir == "" {
		b.Skip("STRATA_DUCKDB_DIR (scripts/duckdb.sh; make bench sets it) is needed to compare with DuckDB")
	}
	for b.Loop() {
		st := newMergedStore(b, "p9")
		c, do, drain := st.cluster, st.do, st.drain
		fragments := p9FragmentFiles(b, c.data, st.manifest.Fragments)

		// HTTP: every page, Arrow IPC then JSON.
		var columns []string
		scan := func(accept string) time.Duration {
			start, rows, cursor := time.Now(), 0, ""
			for {
				resp := do("GET", "/api/v1/rollouts/p9/records?limit="+strconv.Itoa(p9Batch)+"&cursor="+url.QueryEscape(cursor), "", accept, nil)
				if accept != "" {
					rd, err := ipc.NewReader(resp.Body, ipc.WithAllocator(memory.DefaultAllocator))
					if err != nil {
						b.Fatal(err)
					}
					for rd.Next() {
						rows += int(rd.RecordBatch().NumRows())
						if columns == nil {
							for _, f := range rd.Schema().Fields() {
								columns = append(columns, f.Name)
							}
						}
					}
					if rd.Err() != nil {
						b.Fatal(rd.Err())
					}
					rd.Release()
					cursor = resp.Header.Get("X-Next-Cursor")
				} else {
					body, err := io.ReadAll(resp.Body)
					if err != nil {
						b.Fatal(err)
					}
					cursor = p9NextCursor(body)
					rows += bytes.Count(body, []byte(`"id":`))
				}
				drain(resp)
				if cursor == "" {
					break
				}
			}
			if rows != p9Rows {
				b.Fatalf("the scan (%q) returned %d rows, want %d", accept, rows, p9Rows)
			}
			return time.Since(start)
		}
		// The first scan after the build is reported apart: it runs while the process grows its
		// heap into memory it has not touched yet (a first touch of a page faults, and on this
		// machine a fault costs ~10 µs), which the scans after it do not; how much it pays
		// depends on what the build left mapped, not on the scan.
		firstTime := scan("application/vnd.apache.arrow.stream")
		stopProfile := benchfmt.ProfileCPU("p9-scan-arrow.cpu.pb.gz")
		arrowTime := scan("application/vnd.apache.arrow.stream")
		stopProfile()
		stopProfile = benchfmt.ProfileCPU("p9-scan-json.cpu.pb.gz")
		jsonTime := scan("")
		stopProfile()
		duckTime := p9DuckDB(b, duckDir, fragments, columns, "ORDER BY id")
		duckUnorderedTime := p9DuckDB(b, duckDir, fragments, columns, "")

		rate := func(d time.Duration) float64 { return p9Rows / d.Seconds() }
		benchfmt.Report("P9-scan-arrow-rows", rate(arrowTime), "rows/s", "full keyset scan of a merged 1M-row store over HTTP, Arrow IPC pages of 10,000 rows")
		benchfmt.Report("P9-scan-json-rows", rate(jsonTime), "rows/s", "the same scan, JSON pages")
		benchfmt.Report("P9-scan-first-arrow-rows", rate(firstTime), "rows/s", "the first Arrow IPC scan after the store's build (not counted in the ratios)")
		benchfmt.Report("P9-duckdb-rows", rate(duckTime), "rows/s", fmt.Sprintf("DuckDB streaming the same %d fragments' rows in id order (the same columns)", len(fragments)))
		benchfmt.Report("P9-scan-vs-duckdb", duckTime.Seconds()/arrowTime.Seconds(), "x", "Arrow IPC scan rows/s / DuckDB rows/s (goal >= 1.0)")
		benchfmt.Report("P9-scan-json-vs-duckdb", duckTime.Seconds()/jsonTime.Seconds(), "x", "JSON scan rows/s / DuckDB rows/s (goal >= 0.5)")
		benchfmt.Report("P9-duckdb-unordered-rows", rate(duckUnorderedTime), "rows/s", "DuckDB streaming the same fragments' rows in no particular order (no ORDER BY: no sort, no deduplication)")
		benchfmt.Report("P9-scan-vs-duckdb-unordered", duckUnorderedTime.Seconds()/arrowTime.Seconds(), "x", "Arrow IPC scan rows/s (ordered, deduplicated) / DuckDB's unordered rows/s (goal >= 0.5)")
	}
}

// p9Body is append batch i as an Arrow IPC stream: ids p9-<row> (p9ID), 500 B of text each.
func p9Body(i int, texts []string) []byte {
	return rolloutIPCBody(p9Batch, func(r int) (string, string, string) {
		row := i*p9Batch + r
		return p9ID(row), fmt.Sprintf("t%d", row/100), texts[row%len(texts)][:p9TextBytes]
	})
}

func p9ID(row int) string { return fmt.Sprintf("p9-%08d", row) }

// p9NextCursor is a JSON page's next_cursor (written last), or "".
func p9NextCursor(body []byte) string {
	i := bytes.LastIndex(body, []byte(`"next_cursor":"`))
	if i < 0 {
		return ""
	}
	rest := body[i+len(`"next_cursor":"`):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// p9FragmentFiles finds the manifest's fragment files under the data directory.
func p9FragmentFiles(b *testing.B, dataDir string, frags []table.Fragment) []string {
	want := map[string]bool{}
	for _, f := range frags {
		want[filepath.Base(f.Path)] = true
	}
	var out []string
	err := filepath.WalkDir(dataDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && want[d.Name()] {
			out = append(out, p)
		}
		return err
	})
	if err != nil || len(out) != len(want) {
		b.Fatalf("fragments: found %d of %d (%v)", len(out), len(want), err)
	}
	return out
}

// p9DuckDB times DuckDB streaming every row of the fragments (the named columns), in id order
// with order "ORDER BY id" or as it reads them with "", fetching each result chunk without
// converting it to JavaScript values. Fragments do not store
// the columns null in every one of their rows: DuckDB reads the union of the fragments' columns
// (union_by_name) and returns a column none of them stores as a NULL constant, as the scan
// returns it as nulls.
func p9DuckDB(b *testing.B, dir string, fragments, columns []string, order string) time.Duration {
	stored := map[string]bool{}
	for _, path := range fragments {
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			b.Fatal(err)
		}
		for i := range pf.MetaData().Schema.NumColumns() {
			stored[pf.MetaData().Schema.Column(i).ColumnPath()[0]] = true
		}
		_ = pf.Close()
	}
	selected := make([]string, len(columns))
	for i, c := range columns {
		if selected[i] = `"` + c + `"`; !stored[c] {
			selected[i] = `NULL AS "` + c + `"`
		}
	}
	script := `import { DuckDBInstance } from '@duckdb/node-api';
const [files, cols, order] = [JSON.parse(process.argv[2]), JSON.parse(process.argv[3]), process.argv[4]];
const inst = await DuckDBInstance.create(':memory:');
const conn = await inst.connect();
const list = files.map((f) => "'" + f + "'").join(',');
const start = process.hrtime.bigint();
const res = await conn.stream('SELECT ' + cols.join(',') + ' FROM read_parquet([' + list + '], union_by_name=true) ' + order);
let rows = 0;
for (;;) {
  const chunk = await res.fetchChunk();
  if (!chunk || chunk.rowCount === 0) break;
  rows += chunk.rowCount;
}
console.log(JSON.stringify({ rows, ns: Number(process.hrtime.bigint() - start) }));
`
	if err := os.WriteFile(filepath.Join(dir, "p9.mjs"), []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	files, cols := jsonList(fragments), jsonList(selected)
	cmd := exec.Command("node", "p9.mjs", files, cols, order)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("duckdb: %v: %s", err, out)
	}
	var res struct{ Rows, NS int64 }
	if err := json.Unmarshal(bytes.TrimSpace(out), &res); err != nil || res.Rows != p9Rows {
		b.Fatalf("duckdb: %s (%v)", out, err)
	}
	return time.Duration(res.NS)
}

func jsonList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}
