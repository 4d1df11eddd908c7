package api_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/fakesql"
	"github.com/strata-store/strata/sqlquery"
)

// sqlWorker is a worker whose SQL runner is the test double (no DuckDB in this test binary: the
// real runner is tested in sqlquery/duckrun and through the strata binary in cmd/strata).
func sqlWorker(t *testing.T, c *cluster, instance string, maxRows int) *worker {
	t.Helper()
	runner := &fakesql.Runner{Refuse: map[string]error{
		"busy": sqlquery.ErrBusy, "slow": fmt.Errorf("%w (1m0s)", sqlquery.ErrTimeout)}}
	return c.worker(instance, func(d *api.Deps) { d.SQL = runner; d.QueryMaxRows = maxRows })
}

func postRaw(w *worker, path, body, accept string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	if accept != "" {
		req.Header.Set(echo.HeaderAccept, accept)
	}
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	return rec
}

// The query route answers lance-context's shape (every worker's sealed rows in the snapshot), in
// every format, caps its rows, and maps the runner's errors: a refused statement is 400
// INVALID_SQL with the engine's message, a busy runner 503 with Retry-After, a query past its
// time 408, a server without SQL 503.
func TestQueryRoute(t *testing.T) {
	c := newCluster(t)
	w := sqlWorker(t, c, "w1", 200)
	other := c.worker("w2")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "r"}, nil))
	var records []any
	for i := range 120 {
		records = append(records, rollout(fmt.Sprintf("r%03d", i), fmt.Sprintf("t%d", i%3)))
	}
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/r/records?flush=true", map[string]any{"records": records}, nil))
	var merged api.MergeWALResponse
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/internal/merge-wal/r", nil, &merged))
	require.Equal(t, http.StatusCreated, other.do(t, "POST", "/api/v1/rollouts/r/records?flush=true", map[string]any{"records": []any{rollout("zz-late", "t9")}}, nil))

	var res api.QueryResponse
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts/r/query", map[string]any{"sql": "SELECT id, rollout_id FROM t", "limit": 2}, &res))
	require.Equal(t, []string{"id", "rollout_id"}, res.Columns)
	require.Equal(t, []string{"utf8", "utf8"}, res.Types)
	require.Equal(t, [][]any{{"r000", "t0"}, {"r001", "t1"}}, res.Rows)
	require.Equal(t, 2, res.RowCount)
	require.True(t, res.Truncated)
	require.NotZero(t, res.TableVersion)

	// Every worker's sealed rows; the base table alone (lance-context's "fragments"); the cap.
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts/r/query", map[string]any{"sql": "SELECT id FROM t"}, &res))
	require.Equal(t, 121, res.RowCount)
	require.False(t, res.Truncated)
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts/r/query", map[string]any{"sql": "SELECT id FROM t", "source": "fragments"}, &res))
	require.Equal(t, 120, res.RowCount)
	require.Equal(t, http.StatusOK, sqlWorker(t, c, "w3", 50).do(t, "POST", "/api/v1/rollouts/r/query", map[string]any{"sql": "SELECT id FROM t"}, &res))
	require.Equal(t, 50, res.RowCount, "the server's cap")
	require.True(t, res.Truncated)

	// Arrow, CSV and Parquet.
	rec := postRaw(w, "/api/v1/rollouts/r/query", `{"sql": "SELECT id, rollout_id FROM t", "limit": 3}`, api.MIMEArrowStream)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rd, err := ipc.NewReader(bytes.NewReader(rec.Body.Bytes()), ipc.WithAllocator(mem))
	require.NoError(t, err)
	n := 0
	for rd.Next() {
		n += int(rd.RecordBatch().NumRows())
	}
	require.NoError(t, rd.Err())
	rd.Release()
	mem.AssertSize(t, 0)
	require.Equal(t, 3, n)
	rec = postRaw(w, "/api/v1/rollouts/r/query?format=csv", `{"sql": "SELECT id, rollout_id FROM t", "source": "wal"}`, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Header().Get(echo.HeaderContentDisposition), "attachment")
	lines, err := csv.NewReader(rec.Body).ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{{"id", "rollout_id"}, {"zz-late", "t9"}}, lines)
	rec = postRaw(w, "/api/v1/rollouts/r/query?format=parquet", `{"sql": "SELECT id FROM t"}`, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	pf, err := file.NewParquetReader(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err)
	require.Equal(t, int64(121), pf.NumRows())
	require.NoError(t, pf.Close())

	for body, want := range map[string][2]any{
		`{"sql": "DELETE FROM t"}`:              {http.StatusBadRequest, api.CodeInvalidSQL},
		`{"sql": "SELECT nope FROM t"}`:         {http.StatusBadRequest, api.CodeInvalidSQL},
		`{"sql": ""}`:                           {http.StatusBadRequest, api.CodeInvalidSQL},
		`{"sql": "SELECT 1", "source": "both"}`: {http.StatusBadRequest, api.CodeInvalidRequest},
		`{"sql": 1}`:                            {http.StatusBadRequest, api.CodeInvalidRequest},
		`{"sql": "SELECT 1", "limit": -1}`:      {http.StatusBadRequest, api.CodeInvalidRequest},
		`{"sql": "SELECT busy FROM t"}`:         {http.StatusServiceUnavailable, api.CodeOverloaded},
		`{"sql": "SELECT slow FROM t"}`:         {http.StatusRequestTimeout, api.CodeTimeout},
	} {
		status, code := errCode(t, w, "POST", "/api/v1/rollouts/r/query", body)
		require.Equal(t, want[0], status, body)
		require.Equal(t, want[1], code, body)
	}
	rec = postRaw(w, "/api/v1/rollouts/r/query", `{"sql": "SELECT busy FROM t"}`, "")
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	rec = postRaw(w, "/api/v1/rollouts/r/query?format=xml", `{"sql": "SELECT id FROM t"}`, "")
	require.Equal(t, http.StatusBadRequest, rec.Code)
	var env api.ErrorBody
	w.do(t, "POST", "/api/v1/rollouts/r/query", `{"sql": "SELECT nope FROM t"}`, &env)
	require.Contains(t, env.Error.Message, "nope", "the engine's message")
	status, _ := errCode(t, w, "POST", "/api/v1/rollouts/missing/query", `{"sql": "SELECT 1"}`)
	require.Equal(t, http.StatusNotFound, status)
	status, code := errCode(t, other, "POST", "/api/v1/rollouts/r/query", `{"sql": "SELECT 1"}`)
	require.Equal(t, http.StatusServiceUnavailable, status, "a server without SQL")
	require.Equal(t, api.CodeUnavailable, code)
}

// The batch reads: up to 1,024 ids in one request, answered in the order asked, absent ids left
// out; listings read the base table, the WAL or both.
func TestGetRowsAndListingSources(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	schema := `{"columns": [["id", "string"], ["step", "int64"], ["blob", "binary"]]}`
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "schema": `+schema+`}`, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/g/rows?flush=true", map[string]any{"rows": []any{
		map[string]any{"id": "a", "step": 1, "blob": "AQI="}, map[string]any{"id": "b", "step": 2}, map[string]any{"id": "c", "step": 3},
	}}, nil))
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/generic/g/merge-wal", nil, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/g/rows", map[string]any{"rows": []any{map[string]any{"id": "b", "step": 20}}}, nil))

	var rows api.RowsPage
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/generic/g/get-rows", map[string]any{"ids": []string{"c", "zz", "b", "c"}}, &rows))
	require.Equal(t, []map[string]any{{"id": "c", "step": 3.0}, {"id": "b", "step": 20.0}}, rowsOf(t, rows.Rows))
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/generic/g/get-rows", map[string]any{"ids": []string{"a"}, "columns": []string{"blob"}}, &rows))
	require.Equal(t, []map[string]any{{"id": "a", "blob": "AQI="}}, rowsOf(t, rows.Rows))
	many := make([]string, 1025)
	for i := range many {
		many[i] = "x"
	}
	for _, body := range []any{map[string]any{"ids": many}, map[string]any{"ids": []string{""}}, map[string]any{"ids": []string{"a"}, "columns": []string{"nope"}}} {
		status, _ := errCode(t, w, "POST", "/api/v1/generic/g/get-rows", body)
		require.Equal(t, http.StatusBadRequest, status)
	}

	for source, want := range map[string][]float64{"": {1, 20, 3}, "all": {1, 20, 3}, "base": {1, 2, 3}, "fragments": {1, 2, 3}, "wal": {20}} {
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows?source="+source, nil, &rows), source)
		var steps []float64
		for _, r := range rowsOf(t, rows.Rows) {
			steps = append(steps, r["step"].(float64))
		}
		require.Equal(t, want, steps, source)
	}
	status, _ := errCode(t, w, "GET", "/api/v1/generic/g/rows?source=both", nil)
	require.Equal(t, http.StatusBadRequest, status)
	// A retained version of the base table (time travel; no WAL), as for rollouts.
	var info api.StoreInfo
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g", nil, &info))
	require.Equal(t, http.StatusOK, w.do(t, "GET", fmt.Sprintf("/api/v1/generic/g/rows?version=%d", *info.Version), nil, &rows))
	require.Len(t, rows.Rows, 3)
	require.Contains(t, string(rows.Rows[1]), `"step":2`, "the merged version, not the WAL's update")

	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "r"}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/r/records", map[string]any{"records": []any{rollout("x", "t"), rollout("y", "t")}}, nil))
	var page api.RecordsPage
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts/r/get-rows", map[string]any{"ids": []string{"y", "x"}}, &page))
	require.Len(t, page.Records, 2)
	require.Equal(t, "y", rowsOf(t, page.Records)[0]["id"])
}

func rowsOf(t *testing.T, raw []json.RawMessage) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		require.NoError(t, json.Unmarshal(r, &out[i]))
	}
	return out
}

// The maintenance history route answers the catalog's runs of a store, newest first.
func TestMaintenanceHistoryRoute(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "h"}, nil))
	now := time.Now()
	for i, outcome := range []string{catalog.RunOK, catalog.RunFailed} {
		require.NoError(t, c.cat.RecordRun(context.Background(), catalog.MaintenanceRun{Kind: catalog.KindRollout, Name: "h", Op: "merge_wal",
			StartedAt: now.Add(time.Duration(i) * time.Second), FinishedAt: now.Add(time.Duration(i)*time.Second + time.Millisecond), Outcome: outcome, Detail: outcome}))
	}
	var hist api.MaintenanceHistory
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/admin/rollout/h/history?limit=5", nil, &hist))
	require.Len(t, hist.Runs, 2)
	require.Equal(t, catalog.RunFailed, hist.Runs[0].Outcome, "newest first")
	status, _ := errCode(t, w, "GET", "/api/v1/admin/rollout/missing/history", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = errCode(t, w, "GET", "/api/v1/admin/rollout/h/history?limit=1000", nil)
	require.Equal(t, http.StatusBadRequest, status)
}
