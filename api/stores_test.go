package api_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/fakemaint"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/workflows"
)

// cluster is one catalog and one data directory shared by several workers.
type cluster struct {
	t       testing.TB
	cat     *catalog.Catalog
	dataDir string
	mem     memory.Allocator

	appendMaxGenerations int // 0 = the default backpressure limit
	// cacheBytes, when set, is the workers' process-wide object cache (else each store gets
	// lsm's small default).
	cacheBytes int64
	// wrap, when set, wraps each worker's object store (fault injection).
	wrap func(objstore.Store) objstore.Store
	// capacity is the workers' open-store cache (0: 4); retainFor their --feed-retention.
	capacity  int
	retainFor time.Duration
}

// testStorage: with STRATA_TEST_API_STORAGE=s3, azure or gcs the clusters keep their stores on
// that object store's test service; `make test` runs this package once more on each (gcs with
// -tags gcs, which links the gs:// store).
var testStorage = os.Getenv("STRATA_TEST_API_STORAGE")

func newCluster(t *testing.T) *cluster {
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	dataDir := t.TempDir()
	if testStorage != "" {
		dataDir = testenv.ObjectStore(t, testStorage)
	}
	return &cluster{t: t, cat: cat, dataDir: dataDir, mem: mem}
}

type worker struct {
	e   *echo.Echo
	mgr *storecache.Manager
	reg *prometheus.Registry
}

func (c *cluster) worker(instance string, mod ...func(*api.Deps)) *worker {
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr, err := storecache.New(c.cat, storecache.Config{DataURL: c.dataDir, Capacity: cmp.Or(c.capacity, 4), WrapObjects: c.wrap, Store: lsm.Options{
		Instance: instance, Allocator: c.mem, Clock: hlc.New(nil), Budget: budget.New(1<<30, reg),
		Metrics: lsm.NewMetrics(reg), Table: table.Options{Metrics: table.NewMetrics(reg), Allocator: c.mem, Cache: cache.New(c.cacheBytes, nil)},
		AppendMaxGenerations: c.appendMaxGenerations, RetainFor: c.retainFor,
	}}, reg, log)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watching := make(chan struct{})
	go func() { defer close(watching); mgr.RunSealWatch(watchCtx) }()
	c.t.Cleanup(func() { stopWatch(); <-watching })
	d := api.Deps{Log: log, Catalog: c.cat, Stores: mgr, Registry: reg, Version: "test", Allocator: c.mem}
	for _, f := range mod {
		f(&d)
	}
	return &worker{e: api.New(d), mgr: mgr, reg: reg}
}

func (w *worker) do(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var r io.Reader
	ct := echo.MIMEApplicationJSON
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		r = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, r)
	if r != nil {
		req.Header.Set(echo.HeaderContentType, ct)
	}
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	if out != nil && rec.Body.Len() > 0 {
		// Decode into a zeroed value: omitted fields must not keep an earlier response's values.
		if v := reflect.ValueOf(out); v.Kind() == reflect.Pointer && !v.IsNil() {
			v.Elem().Set(reflect.Zero(v.Elem().Type()))
		}
		if b, ok := out.(*[]byte); ok {
			*b = rec.Body.Bytes()
		} else {
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), out), rec.Body.String())
		}
	}
	return rec.Code
}

func errCode(t *testing.T, w *worker, method, path string, body any) (int, string) {
	t.Helper()
	var env api.ErrorBody
	status := w.do(t, method, path, body, &env)
	return status, env.Error.Code
}

func rollout(id, rolloutID string, extra ...string) map[string]any {
	r := map[string]any{"id": id, "rollout_id": rolloutID, "content": "hello " + id}
	for i := 0; i+1 < len(extra); i += 2 {
		r[extra[i]] = extra[i+1]
	}
	return r
}

func TestRolloutStoreLifecycle(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	var info api.StoreInfo
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "exp-1"}, &info))
	require.Equal(t, "exp-1", info.Name)
	status, code := errCode(t, w, "POST", "/api/v1/rollouts", `{"name": "exp-1"}`)
	require.Equal(t, http.StatusConflict, status, "a store of that name exists: 409, as in lance-context")
	require.Equal(t, api.CodeAlreadyExists, code)
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "exp-1", "exist_ok": true}, nil), "exist_ok: idempotent")
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts?exist_ok=true", map[string]any{"name": "exp-1"}, nil), "exist_ok as a query parameter")
	created := info.Version
	require.NotNil(t, created, "a create reports the store's version")
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1", nil, &info))
	require.NotNil(t, info.Version)
	require.Equal(t, *info.Version, *created, "the version a create reports is the table's")

	var app api.AppendResponse
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/exp-1/records", map[string]any{"records": []any{
		rollout("r1", "traj-a", "policy_version", "v1"),
		rollout("r2", "traj-a", "policy_version", "v2"),
		map[string]any{"id": "r3", "rollout_id": "traj-b", "reward": 0.5, "input_tokens": []int{1, 2, 3},
			"relationships": []any{map[string]any{"target_id": "r1", "relation": "follows"}},
			"metadata":      map[string]any{"k": []int{1}}, "binary_payload": "aGVsbG8=", "include_in_training": true},
	}}, &app))
	require.Equal(t, 3, app.Count)
	require.Equal(t, []string{"r1", "r2", "r3"}, app.IDs)

	var got api.RecordResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records/r3", nil, &got))
	var r3 map[string]any
	require.NoError(t, json.Unmarshal(got.Record, &r3))
	require.Equal(t, "traj-b", r3["problem_id"], "problem_id defaults to rollout_id")
	require.Equal(t, "assistant", r3["role"])
	require.Equal(t, "text/plain", r3["content_type"])
	require.EqualValues(t, 0, r3["sequence_order"])
	require.Equal(t, map[string]any{"k": []any{1.0}}, r3["metadata"])
	require.Equal(t, []any{1.0, 2.0, 3.0}, r3["input_tokens"])
	require.NotContains(t, r3, "binary_payload", "blobs are never inlined on get")
	_, err := time.Parse(time.RFC3339Nano, r3["created_at"].(string))
	require.NoError(t, err)
	// The answer is one compact JSON document of application/json (?pretty indents the same).
	var raw, pretty []byte
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records/r3", nil, &raw))
	require.True(t, json.Valid(raw), "%s", raw)
	require.Equal(t, "{\"record\":", string(raw[:10]))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records/r3?pretty", nil, &pretty))
	require.Contains(t, string(pretty), "\n  ")
	var compacted, indented api.RecordResponse
	require.NoError(t, json.Unmarshal(raw, &compacted))
	require.NoError(t, json.Unmarshal(pretty, &indented))
	require.JSONEq(t, string(compacted.Record), string(indented.Record))

	var blob []byte
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records/r3/blob", nil, &blob))
	require.Equal(t, "hello", string(blob))
	status, code = errCode(t, w, "GET", "/api/v1/rollouts/exp-1/records/r1/blob", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, api.CodeNotFound, code)

	var page api.RecordsPage
	require.Equal(t, http.StatusOK, w.do(t, "GET", `/api/v1/rollouts/exp-1/records?filters={"policy_version":"v2"}`, nil, &page))
	require.Len(t, page.Records, 1)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records?limit=2", nil, &page))
	require.Len(t, page.Records, 2)
	require.NotEmpty(t, page.NextCursor)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records?limit=2&cursor="+page.NextCursor, nil, &page))
	require.Len(t, page.Records, 1)
	require.Empty(t, page.NextCursor)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records?offset=2", nil, &page))
	require.Len(t, page.Records, 1)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records?offset=9", nil, &page))
	require.Empty(t, page.Records)

	var del api.DeleteResponse
	require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/rollouts/exp-1/records/r2", nil, &del))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/exp-1/records/r2", nil, &got))
	require.Equal(t, "null", string(got.Record))

	var list api.StoreList
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts", nil, &list))
	require.Len(t, list.Stores, 1)
	require.Equal(t, http.StatusNoContent, w.do(t, "DELETE", "/api/v1/rollouts/exp-1", nil, nil))
	status, code = errCode(t, w, "GET", "/api/v1/rollouts/exp-1", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, api.CodeNotFound, code)
	status, _ = errCode(t, w, "POST", "/api/v1/rollouts/exp-1/records", map[string]any{"records": []any{rollout("x", "y")}})
	require.Equal(t, http.StatusNotFound, status)
}

func TestFlushTrueGivesReadYourWriteFromAnotherWorker(t *testing.T) {
	c := newCluster(t)
	w1, w2 := c.worker("w1"), c.worker("w2")
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "s"}, nil))
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts/s/records", map[string]any{"records": []any{rollout("a", "t")}}, nil))
	var got api.RecordResponse
	w1.do(t, "GET", "/api/v1/rollouts/s/records/a", nil, &got)
	require.NotEqual(t, "null", string(got.Record), "the appending worker reads its own write")
	w2.do(t, "GET", "/api/v1/rollouts/s/records/a", nil, &got)
	require.Equal(t, "null", string(got.Record), "by default another worker sees it only after a seal")

	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts/s/records?flush=true", map[string]any{"records": []any{rollout("b", "t")}}, nil))
	w2.do(t, "GET", "/api/v1/rollouts/s/records/b", nil, &got)
	require.NotEqual(t, "null", string(got.Record))
	w2.do(t, "GET", "/api/v1/rollouts/s/records/a", nil, &got)
	require.NotEqual(t, "null", string(got.Record), "the seal covered the earlier append too")

	// The sweeper seals the rest and reports shard stats.
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts/s/records", map[string]any{"records": []any{rollout("c", "t")}}, nil))
	w1.mgr.FlushPass(context.Background(), time.Second, nil)
	w2.do(t, "GET", "/api/v1/rollouts/s/records/c", nil, &got)
	require.NotEqual(t, "null", string(got.Record))
	st, err := c.cat.GetStoreStats(context.Background(), catalog.KindRollout, "s")
	require.NoError(t, err)
	require.Equal(t, 2, st.PendingGenerations)
}

func TestRejectionsChangeNothing(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "s"}, nil))
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"POST", "/api/v1/rollouts", map[string]any{"name": "../x"}, 400},
		{"POST", "/api/v1/rollouts", map[string]any{"name": "_registry"}, 400},
		{"POST", "/api/v1/rollouts", map[string]any{"name": strings.Repeat("a", 129)}, 400},
		{"POST", "/api/v1/rollouts", `{"name": "x", "bogus": 1}`, 400},
		{"POST", "/api/v1/rollouts", `{not json`, 400},
		{"GET", "/api/v1/rollouts/a%2Fb", nil, 400},
		{"GET", "/api/v1/rollouts/..", nil, 400},
		{"GET", "/api/v1/rollouts/nope", nil, 404},
		{"POST", "/api/v1/rollouts/s/records", map[string]any{"records": []any{}}, 400},
		{"POST", "/api/v1/rollouts/s/records", map[string]any{"records": []any{map[string]any{"id": "x"}}}, 400},
		{"POST", "/api/v1/rollouts/s/records", map[string]any{"records": []any{rollout("x", "y", "undeclared", "1")}}, 400},
		{"POST", "/api/v1/rollouts/s/records", map[string]any{"records": []any{rollout("ok", "y"), map[string]any{"id": "bad", "rollout_id": "y", "reward": "high"}}}, 400},
		{"POST", "/api/v1/rollouts/s/records", `{"records": [{"id": "d", "id": "e", "rollout_id": "y"}]}`, 400}, // duplicate name
		{"POST", "/api/v1/rollouts/s/records", `{"records": [{"id": "x", "rollout_id": "y"}], "other": 1}`, 400},
		{"POST", "/api/v1/rollouts/s/records", `{"records": [{"id": "x", "rollout_id": "y"}]} {}`, 400},
		{"POST", "/api/v1/rollouts/s/records", `{"records": [["x"]]}`, 400},
		{"POST", "/api/v1/rollouts/s/records", `{"records": {"id": "x"}}`, 400},
		{"POST", "/api/v1/rollouts/s/records", `{"records": [{"id": "x", "rollout_id": "y"}`, 400},
		{"POST", "/api/v1/rollouts/s/records", ``, 400},
		{"POST", "/api/v1/generic/nope/rows", `{"rows": [`, 400}, // syntax is checked before the store
		{"GET", `/api/v1/rollouts/s/records?filters={"nope":"x"}`, nil, 400},
		{"GET", `/api/v1/rollouts/s/records?filters={"include_in_training":"yes"}`, nil, 400},
		{"GET", "/api/v1/rollouts/s/records?limit=0", nil, 400},
		{"GET", "/api/v1/rollouts/s/records?offset=-1", nil, 400},
	} {
		status, code := errCode(t, w, tc.method, tc.path, tc.body)
		require.Equal(t, tc.status, status, "%s %s %v", tc.method, tc.path, tc.body)
		require.NotEmpty(t, code, "%s %s: error envelope", tc.method, tc.path)
	}
	// Unsupported content type.
	req := httptest.NewRequest("POST", "/api/v1/rollouts/s/records", strings.NewReader(`x`))
	req.Header.Set(echo.HeaderContentType, "text/csv")
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnsupportedMediaType, rec.Code)

	var page api.RecordsPage
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/s/records", nil, &page))
	require.Empty(t, page.Records, "no rejected batch wrote anything, not even its valid rows")

	// Whitespace around the document (curl -d @file, json.Encoder) is fine.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/s/records?flush=true",
		"\n {\"records\": [{\"id\": \"w\", \"rollout_id\": \"y\"}]}\n", nil))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/s/records", nil, &page))
	require.Len(t, page.Records, 1)
	var list api.StoreList
	w.do(t, "GET", "/api/v1/rollouts", nil, &list)
	require.Len(t, list.Stores, 1)
}

func TestGenericStoreRoundTrip(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	schema := `{"columns": [["id", "string"], ["score", {"type": "float64"}], ["step", {"type": "int64", "nullable": false}],
		["tags", {"type": "list", "item": "string"}], ["blob", "binary"], ["ok", "bool"]]}`
	status, _ := errCode(t, w, "POST", "/api/v1/generic", `{"name": "g", "schema": {"columns": [["x", "nonsense"]]}}`)
	require.Equal(t, http.StatusBadRequest, status)
	var list api.StoreList
	w.do(t, "GET", "/api/v1/generic", nil, &list)
	require.Empty(t, list.Stores, "an invalid schema creates nothing")

	var info api.StoreInfo
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "schema": `+schema+`}`, &info))
	require.JSONEq(t, schema, string(info.Schema))
	require.Equal(t, http.StatusConflict, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "schema": {"columns": [["id", "string"], ["step", "int32"]]}}`, nil))
	require.Equal(t, http.StatusConflict, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "schema": `+schema+`}`, nil), "the same definition is 409 too")
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "exist_ok": true, "schema": `+schema+`}`, nil))
	require.Equal(t, http.StatusConflict, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "exist_ok": true, "schema": {"columns": [["id", "string"], ["step", "int32"]]}}`, nil),
		"exist_ok never hides a different definition")

	var app api.AppendResponse
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/g/rows?flush=true", map[string]any{"rows": []any{
		map[string]any{"id": "a", "score": 1.5, "step": 1, "tags": []string{"x"}, "blob": "AQI=", "ok": true},
		map[string]any{"id": "b", "step": 2},
		map[string]any{"id": "a", "score": 2.5, "step": 3},
	}}, &app))
	require.Equal(t, 3, app.Count)
	status, _ = errCode(t, w, "POST", "/api/v1/generic/g/rows", map[string]any{"rows": []any{map[string]any{"id": "c", "step": 1, "undeclared": 1}}})
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = errCode(t, w, "POST", "/api/v1/generic/g/rows", map[string]any{"rows": []any{map[string]any{"id": "c"}}})
	require.Equal(t, http.StatusBadRequest, status, "a non-null column is required")

	var row map[string]any
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows/a", nil, &row))
	require.Equal(t, 2.5, row["score"], "newest write per id wins")
	require.NotContains(t, row, "blob")
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows/a?columns=step", nil, &row))
	require.Equal(t, map[string]any{"id": "a", "step": 3.0}, row)
	status, _ = errCode(t, w, "GET", "/api/v1/generic/g/rows/zzz", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = errCode(t, w, "GET", "/api/v1/generic/g/rows/a?columns=missing", nil)
	require.Equal(t, http.StatusBadRequest, status)

	var rows api.RowsPage
	require.Equal(t, http.StatusOK, w.do(t, "GET", `/api/v1/generic/g/rows?filter={"step":2}`, nil, &rows))
	require.Len(t, rows.Rows, 1)
	status, _ = errCode(t, w, "GET", `/api/v1/generic/g/rows?filter={"nope":1}`, nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/generic/g/rows/b", nil, nil))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows", nil, &rows))
	require.Len(t, rows.Rows, 1)
}

func TestAnEvictedStoreReopensTransparently(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1") // capacity 4
	for i := range 6 {
		name := fmt.Sprintf("s%d", i)
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": name}, nil))
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/"+name+"/records", map[string]any{"records": []any{rollout("a", "t")}}, nil))
	}
	var got api.RecordResponse
	for i := range 6 {
		require.Equal(t, http.StatusOK, w.do(t, "GET", fmt.Sprintf("/api/v1/rollouts/s%d/records/a", i), nil, &got))
		require.NotEqual(t, "null", string(got.Record), "store s%d lost its row across eviction", i)
	}
}

func TestBearerToken(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.APIToken = "s3cret" })
	status, code := errCode(t, w, "GET", "/api/v1/rollouts", nil)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, api.CodeUnauthorized, code)
	req := httptest.NewRequest("GET", "/api/v1/rollouts", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/health", nil, nil), "health stays open")
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/metrics", nil, nil), "metrics stay open")
}

func TestEveryRouteIsDocumentedAndMetricsPassPromlint(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/openapi.json", nil, &doc))
	for _, r := range w.e.Routes() {
		if r.Method == echo.RouteNotFound || strings.HasSuffix(r.Path, "/*") {
			continue
		}
		path := r.Path
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, ":") {
				path = strings.Replace(path, seg, "{"+seg[1:]+"}", 1)
			}
		}
		method := r.Method
		if method == http.MethodHead {
			method = http.MethodGet // every GET route answers HEAD too (routes.go): its GET is documented
		}
		require.Contains(t, doc.Paths, path, "route %s %s is not documented", r.Method, r.Path)
		require.Contains(t, doc.Paths[path], strings.ToLower(method), "route %s %s is not documented", r.Method, r.Path)
	}
	// Exercise the store metrics, then lint the whole registry.
	w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "m"}, nil)
	w.do(t, "POST", "/api/v1/rollouts/m/records?flush=true", map[string]any{"records": []any{rollout("a", "t")}}, nil)
	mfs, err := w.reg.Gather()
	require.NoError(t, err)
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
}

// multipartBody builds a multipart append: parts in order, each (name, bytes).
func multipartBody(t *testing.T, parts ...[2]string) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		fw, err := mw.CreateFormField(p[0])
		require.NoError(t, err)
		_, err = fw.Write([]byte(p[1]))
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	return mw.FormDataContentType(), buf.Bytes()
}

func postMultipart(w *worker, path, ct string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.Header.Set(echo.HeaderContentType, ct)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	return rec
}

func TestMultipartAppendAndItsStrictRejections(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "m"}, nil))
	meta := `{"records": [{"id": "a", "rollout_id": "t", "payload_size": 5}, {"id": "b", "rollout_id": "t"}]}`

	ct, body := multipartBody(t, [2]string{"metadata", meta}, [2]string{"0", "hello"})
	rec := postMultipart(w, "/api/v1/rollouts/m/records", ct, body)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var blob []byte
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/m/records/a/blob", nil, &blob))
	require.Equal(t, "hello", string(blob))

	bad := map[string][][2]string{
		"metadata not first":     {{"0", "hello"}, {"metadata", meta}},
		"part name not an index": {{"metadata", meta}, {"payload", "hello"}},
		"index out of range":     {{"metadata", meta}, {"0", "hello"}, {"7", "x"}},
		"duplicate index":        {{"metadata", meta}, {"0", "hello"}, {"0", "hello"}},
		"size mismatch":          {{"metadata", meta}, {"0", "hell"}},
		"declared but missing":   {{"metadata", meta}},
		"empty records":          {{"metadata", `{"records": []}`}},
	}
	for name, parts := range bad {
		meta2 := strings.ReplaceAll(meta, `"a"`, `"`+strings.ReplaceAll(name, " ", "-")+`"`)
		for i := range parts {
			if parts[i][0] == "metadata" && parts[i][1] == meta {
				parts[i][1] = meta2
			}
		}
		ct, body := multipartBody(t, parts...)
		rec := postMultipart(w, "/api/v1/rollouts/m/records", ct, body)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", name, rec.Body.String())
		var got api.RecordResponse
		w.do(t, "GET", "/api/v1/rollouts/m/records/"+strings.ReplaceAll(name, " ", "-"), nil, &got)
		require.Equal(t, "null", string(got.Record), "%s: nothing written", name)
	}
}

func arrowBody(t *testing.T, mem memory.Allocator, schema *arrow.Schema, fill func(b *array.RecordBuilder)) []byte {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	fill(b)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestArrowIPCAppendAndListing(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "reward", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	body := arrowBody(t, c.mem, schema, func(b *array.RecordBuilder) {
		for i := range 5 {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("r%d", i))
			b.Field(1).(*array.StringBuilder).Append("traj")
			b.Field(2).(*array.Float32Builder).Append(float32(i))
		}
	})
	req := httptest.NewRequest("POST", "/api/v1/rollouts/a/records", bytes.NewReader(body))
	req.Header.Set(echo.HeaderContentType, api.MIMEArrowStream)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var app api.AppendResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &app))
	require.Equal(t, []string{"r0", "r1", "r2", "r3", "r4"}, app.IDs, "an Arrow append names its ids, as a JSON one does")
	require.Equal(t, 5, app.Count)

	req = httptest.NewRequest("GET", "/api/v1/rollouts/a/records?limit=3", nil)
	req.Header.Set(echo.HeaderAccept, api.MIMEArrowStream)
	rec = httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "r2", rec.Header().Get("X-Next-Cursor"))
	r, err := ipc.NewReader(rec.Body, ipc.WithAllocator(c.mem))
	require.NoError(t, err)
	require.True(t, r.Next())
	got := r.RecordBatch()
	require.EqualValues(t, 3, got.NumRows())
	require.Equal(t, "traj", got.Column(got.Schema().FieldIndices("problem_id")[0]).(*array.String).Value(0), "defaults apply to Arrow bodies too")
	r.Release()

	// A column of the wrong type is refused and writes nothing.
	bad := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "reward", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	body = arrowBody(t, c.mem, bad, func(b *array.RecordBuilder) {
		b.Field(0).(*array.StringBuilder).Append("wrong")
		b.Field(1).(*array.StringBuilder).Append("traj")
		b.Field(2).(*array.StringBuilder).Append("high")
	})
	req = httptest.NewRequest("POST", "/api/v1/rollouts/a/records", bytes.NewReader(body))
	req.Header.Set(echo.HeaderContentType, api.MIMEArrowStream)
	rec = httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	var one api.RecordResponse
	w.do(t, "GET", "/api/v1/rollouts/a/records/wrong", nil, &one)
	require.Equal(t, "null", string(one.Record))
}

func TestCompactAndStats(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "c"}, nil))
	s, release, err := w.mgr.Acquire(context.Background(), catalog.KindRollout, "c")
	require.NoError(t, err)
	for i := range 3 {
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/c/records?flush=true", map[string]any{"records": []any{rollout(fmt.Sprint(i), "t"), rollout(fmt.Sprint(i)+"-x", "t")}}, nil))
		_, err := s.MergeShard(context.Background(), s.Shard(), lsm.MergeOptions{})
		require.NoError(t, err)
	}
	// A rewrite masks a row of the first fragment: it gets a deletion vector.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/c/records?flush=true", map[string]any{"records": []any{rollout("0", "t")}}, nil))
	_, err = s.MergeShard(context.Background(), s.Shard(), lsm.MergeOptions{})
	require.NoError(t, err)
	release()
	var stats api.CompactStats
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/c/compact/stats", nil, &stats))
	require.Equal(t, 4, stats.TotalFragments)
	require.Nil(t, stats.LastCompaction)
	var res api.CompactResponse
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts/c/compact", map[string]any{}, &res))
	require.Equal(t, 4, res.FragmentsRemoved)
	require.Equal(t, 1, res.FragmentsAdded)
	require.Equal(t, 5, res.FilesRemoved, "four data files and the first fragment's deletion vector")
	require.Equal(t, 1, res.FilesAdded)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/c/compact/stats", nil, &stats))
	require.Equal(t, 1, stats.TotalFragments)
	require.EqualValues(t, 1, stats.TotalCompactions)
	require.NotNil(t, stats.LastCompaction)
	var page api.RecordsPage
	w.do(t, "GET", "/api/v1/rollouts/c/records", nil, &page)
	require.Len(t, page.Records, 6)
}

// A create answers with the store's true base-table version (lance-context's StoreInfo.version),
// not a constant: after a merge, creating the same store again reports the version a get reads.
func TestCreateReportsTheTablesVersion(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "cv"}, nil))
	s, release, err := w.mgr.Acquire(context.Background(), catalog.KindRollout, "cv")
	require.NoError(t, err)
	defer release()
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/cv/records?flush=true", map[string]any{"records": []any{rollout("a", "t")}}, nil))
	_, err = s.MergeShard(context.Background(), s.Shard(), lsm.MergeOptions{})
	require.NoError(t, err)
	var got, again api.StoreInfo
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/cv", nil, &got))
	require.Greater(t, *got.Version, uint64(1), "the merge made a version")
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "cv", "exist_ok": true}, &again))
	require.Equal(t, *got.Version, *again.Version)
}

func TestCheckoutReadsAnOldVersion(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "v"}, nil))
	s, release, err := w.mgr.Acquire(context.Background(), catalog.KindRollout, "v")
	require.NoError(t, err)
	defer release()
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/v/records?flush=true", map[string]any{"records": []any{rollout("a", "t")}}, nil))
	_, err = s.MergeShard(context.Background(), s.Shard(), lsm.MergeOptions{})
	require.NoError(t, err)
	var info api.StoreInfo
	w.do(t, "GET", "/api/v1/rollouts/v", nil, &info)
	old := *info.Version
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/v/records?flush=true", map[string]any{"records": []any{rollout("b", "t")}}, nil))
	_, err = s.MergeShard(context.Background(), s.Shard(), lsm.MergeOptions{})
	require.NoError(t, err)

	var co api.CheckoutRequest
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/rollouts/v/checkout", map[string]any{"version": old}, &co))
	require.Equal(t, old, co.Version)
	var page api.RecordsPage
	require.Equal(t, http.StatusOK, w.do(t, "GET", fmt.Sprintf("/api/v1/rollouts/v/records?version=%d", old), nil, &page))
	require.Len(t, page.Records, 1)
	var got api.RecordResponse
	w.do(t, "GET", fmt.Sprintf("/api/v1/rollouts/v/records/b?version=%d", old), nil, &got)
	require.Equal(t, "null", string(got.Record), "b came after the checkout")
	w.do(t, "GET", "/api/v1/rollouts/v/records/b", nil, &got)
	require.NotEqual(t, "null", string(got.Record), "the live view is unaffected")
	status, _ := errCode(t, w, "POST", "/api/v1/rollouts/v/checkout", map[string]any{"version": 999})
	require.Equal(t, http.StatusNotFound, status)
	status, _ = errCode(t, w, "GET", "/api/v1/rollouts/v/records?version=abc", nil)
	require.Equal(t, http.StatusBadRequest, status)
}

func TestAdminMaintenanceRoute(t *testing.T) {
	c := newCluster(t)
	var got []string
	w := c.worker("w1", func(d *api.Deps) {
		d.AdminToken = "admin"
		d.Maintenance = &fakemaint.Maintainer{QueueFunc: func(s workflows.StoreRef, r workflows.Request) (string, error) {
			got = append(got, s.WorkflowID()+":"+string(r.Op))
			return "run-1", nil
		}}
	})
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "m"}, nil))
	post := func(path, token, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		return rec
	}
	require.Equal(t, http.StatusUnauthorized, post("/api/v1/admin/rollout/m/maintenance", "", `{"op":"merge_wal"}`).Code)
	rec := post("/api/v1/admin/rollout/m/maintenance", "admin", `{"op":"merge_wal"}`)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	var resp api.MaintenanceResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
	require.Equal(t, "store/rollout/m", resp.WorkflowID)
	require.Equal(t, []string{"store/rollout/m:merge_wal"}, got)
	require.Equal(t, http.StatusBadRequest, post("/api/v1/admin/rollout/m/maintenance", "admin", `{"op":"defrag"}`).Code)
	require.Equal(t, http.StatusBadRequest, post("/api/v1/admin/table/m/maintenance", "admin", `{"op":"compact"}`).Code)
	require.Equal(t, http.StatusNotFound, post("/api/v1/admin/rollout/nope/maintenance", "admin", `{"op":"compact"}`).Code)
	require.Len(t, got, 1, "rejected requests queue nothing")
}

func TestPendingGenerationBackpressureAnswers503(t *testing.T) {
	c := newCluster(t)
	c.appendMaxGenerations = 2
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "bp"}, nil))
	for i := range 2 {
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/bp/records?flush=true", map[string]any{"records": []any{rollout(fmt.Sprint(i), "t")}}, nil))
	}
	req := httptest.NewRequest("POST", "/api/v1/rollouts/bp/records", strings.NewReader(`{"records": [{"id": "x", "rollout_id": "t"}]}`))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), api.CodeOverloaded)
}

// A resident store needs no catalog query to serve appends and reads: with PostgreSQL gone, its
// registry row (a generic store's seal_on_add included) comes from the store cache.
func TestAResidentStoreServesWithoutTheCatalog(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic",
		`{"name": "g", "schema": {"columns": [["id", "string"], ["n", "int64"]]}, "seal_on_add": true}`, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", `{"name": "r"}`, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/g/rows", map[string]any{"rows": []any{map[string]any{"id": "a", "n": 1}}}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/r/records", map[string]any{"records": []any{map[string]any{"id": "a", "rollout_id": "t"}}}, nil))

	c.cat.Close()
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/g/rows", map[string]any{"rows": []any{map[string]any{"id": "b", "n": 2}}}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/r/records", map[string]any{"records": []any{map[string]any{"id": "b", "rollout_id": "t"}}}, nil))
	var info api.StoreInfo
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g", nil, &info))
	require.Contains(t, string(info.Schema), `"n"`)
	var row map[string]any
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows/b", nil, &row))
	require.EqualValues(t, 2, row["n"])

	// What needs the catalog (a store that is not resident, creating one) is told to retry.
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/api/v1/rollouts/not-resident", ""},
		{"POST", "/api/v1/rollouts/not-resident/records", `{"records": [{"id": "a", "rollout_id": "t"}]}`},
		{"POST", "/api/v1/rollouts", `{"name": "new"}`},
	} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(req.method, req.path, strings.NewReader(req.body))
		r.Header.Set("Content-Type", "application/json")
		w.e.ServeHTTP(rec, r)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, "%s %s: %s", req.method, req.path, rec.Body)
		require.Equal(t, "2", rec.Header().Get("Retry-After"))
		require.Contains(t, rec.Body.String(), `"code":"UNAVAILABLE"`)
	}

	s, release, err := w.mgr.Acquire(context.Background(), catalog.KindGeneric, "g")
	require.NoError(t, err)
	defer release()
	snap, err := s.Snapshot(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, snap.PendingGenerations(), "seal_on_add sealed each add, catalog or not")
}

// A seal a client asks for (?flush=true, or POST .../flush) reaches the catalog's stats at once,
// not at the next flush pass: status and the sweeps see the pending generation within seconds.
func TestAFlushRequestedByAClientIsReportedToTheCatalogAtOnce(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", `{"name": "flushed"}`, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/flushed/records?flush=true",
		map[string]any{"records": []any{map[string]any{"id": "a", "rollout_id": "t"}}}, nil))
	st, err := c.cat.GetStoreStats(context.Background(), catalog.KindRollout, "flushed")
	require.NoError(t, err)
	require.Equal(t, 1, st.PendingGenerations)
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/flushed/records",
		map[string]any{"records": []any{map[string]any{"id": "b", "rollout_id": "t"}}}, nil))
	require.Equal(t, http.StatusNoContent, w.do(t, "POST", "/api/v1/rollouts/flushed/flush", nil, nil))
	st, err = c.cat.GetStoreStats(context.Background(), catalog.KindRollout, "flushed")
	require.NoError(t, err)
	require.Equal(t, 2, st.PendingGenerations)
}

// A listing without ?limit answers every store, as lance-context does (its clients never page),
// streamed a catalog page at a time; ?limit pages with next_cursor; ?prefix and ?cursor narrow.
func TestListingWithoutALimitAnswersEveryStore(t *testing.T) {
	defer api.SetStreamStorePage(3)()
	c := newCluster(t)
	w := c.worker("w1")
	var names []string
	for i := range 8 {
		name := fmt.Sprintf("ls-%02d", i)
		names = append(names, name)
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": name}, nil))
	}
	storeNames := func(l api.StoreList) []string {
		var out []string
		for _, s := range l.Stores {
			out = append(out, s.Name)
		}
		return out
	}
	var all api.StoreList
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts", nil, &all))
	require.Equal(t, names, storeNames(all), "every store, across three catalog pages")
	require.Empty(t, all.NextCursor)
	require.NotEmpty(t, all.Stores[0].URI)

	var page api.StoreList
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts?limit=2", nil, &page))
	require.Equal(t, names[:2], storeNames(page))
	require.Equal(t, names[1], page.NextCursor)
	var rest api.StoreList
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts?cursor="+page.NextCursor, nil, &rest))
	require.Equal(t, names[2:], storeNames(rest), "from a cursor to the end")
	var none api.StoreList
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts?prefix=zz", nil, &none))
	require.NotNil(t, none.Stores, "an empty listing is [] (not null)")
	require.Empty(t, none.Stores)
}

// A store's uri never shows the server's filesystem: on a local data location it is relative to
// it in every answer (create, get, listing, streamed listing); in an S3 bucket it is the store's
// s3:// URI.
func TestStoreURIsNeverRevealTheServersDataLocation(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	var created, got api.StoreInfo
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "where"}, &created))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/where", nil, &got))
	var paged, streamed api.StoreList
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts?limit=10", nil, &paged))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts", nil, &streamed))
	require.Len(t, paged.Stores, 1)
	require.Len(t, streamed.Stores, 1)
	onS3 := strings.HasPrefix(c.dataDir, "s3://")
	for _, uri := range []string{created.URI, got.URI, paged.Stores[0].URI, streamed.Stores[0].URI} {
		if onS3 {
			require.Regexp(t, `^s3://[^?]*/rollout/where\.[0-9a-f]{16}$`, uri)
			continue
		}
		require.Regexp(t, `^rollout/where\.[0-9a-f]{16}$`, uri)
		require.NotContains(t, uri, strings.TrimPrefix(c.dataDir, "file://"))
	}
	require.Equal(t, created.URI, got.URI)
}

// lance-context's merge-wal routes: the worker seals its shard and the store's pending
// generations are folded into the base table; the answer counts them ({reclaimed}).
func TestMergeWALRoutesFoldPendingGenerations(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "mw"}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/mw/records?flush=true", map[string]any{"records": []any{rollout("a", "t")}}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/mw/records", map[string]any{"records": []any{rollout("b", "t")}}, nil)) // unsealed
	var res api.MergeWALResponse
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/internal/merge-wal/mw", nil, &res))
	require.Equal(t, 2, res.Reclaimed, "the sealed generation and the one the route sealed")
	s, release, err := w.mgr.Acquire(context.Background(), catalog.KindRollout, "mw")
	require.NoError(t, err)
	m, err := s.TableManifest(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 2, m.Rows(), "both rows are in the base table")
	release()
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/internal/merge-wal/mw", nil, &res))
	require.Zero(t, res.Reclaimed, "nothing left to merge")
	status, code := errCode(t, w, "POST", "/api/v1/internal/merge-wal/nope", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, api.CodeNotFound, code)

	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "gm", "schema": {"columns": [["id", "string"], ["step", "int64"]]}}`, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/gm/rows", `{"rows": [{"id": "x", "step": 1}]}`, nil))
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/generic/gm/merge-wal", nil, &res))
	require.Equal(t, 1, res.Reclaimed)
}

// Arrow bodies from DuckDB or pandas carry BIGINT and DOUBLE where a rollout store has int32
// (sequence_order) and float32 (reward): they are converted when every value fits, and a value
// that does not is a 400 naming its column and row, with nothing written.
func TestArrowAppendsAcceptWiderNumbersThatFit(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "wide"}, nil))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "sequence_order", Type: arrow.PrimitiveTypes.Int64}, {Name: "reward", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	post := func(seq int64, reward float64) *httptest.ResponseRecorder {
		body := arrowBody(t, c.mem, schema, func(b *array.RecordBuilder) {
			for i, id := range []string{"a", "b"} {
				b.Field(0).(*array.StringBuilder).Append(id)
				b.Field(1).(*array.StringBuilder).Append("traj")
				b.Field(2).(*array.Int64Builder).Append(seq + int64(i))
				if i == 1 {
					b.Field(3).(*array.Float64Builder).Append(reward)
				} else {
					b.Field(3).(*array.Float64Builder).AppendNull()
				}
			}
		})
		req := httptest.NewRequest("POST", "/api/v1/rollouts/wide/records?flush=true", bytes.NewReader(body))
		req.Header.Set(echo.HeaderContentType, api.MIMEArrowStream)
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		return rec
	}
	rec := post(math.MaxInt32, 0) // the second row's sequence_order is MaxInt32 + 1
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `column \"sequence_order\" row 1`)
	rec = post(7, 1e300)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `column \"reward\" row 1`)
	var none api.RecordResponse
	w.do(t, "GET", "/api/v1/rollouts/wide/records/a", nil, &none)
	require.Equal(t, "null", string(none.Record), "a refused batch writes nothing")

	rec = post(41, 0.5)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var got api.RecordResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/wide/records/b", nil, &got))
	var row map[string]any
	require.NoError(t, json.Unmarshal(got.Record, &row))
	require.EqualValues(t, 42, row["sequence_order"])
	require.EqualValues(t, 0.5, row["reward"])
}
