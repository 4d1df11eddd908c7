package api_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/datagen"
)

// No request can make the server talk to a host the operator did not configure: storage options
// naming an endpoint or a bucket (the loopback, a metadata address, any listener) are refused
// before anything is registered, and the listener never sees a request.
func TestStorageOptionsNeverReachAHostTheOperatorDidNotConfigure(t *testing.T) {
	var hits atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	endpoint := "http://" + ln.Addr().String()

	c := newCluster(t)
	w := c.worker("w1")
	for _, body := range []string{
		`{"name": "x", "storage_options": {"bucket": "b", "endpoint": "` + endpoint + `", "path_style": "true"}}`,
		`{"name": "x", "storage_options": {"bucket": "b"}}`,
		`{"name": "x", "storage_options": {"endpoint": "http://169.254.169.254"}}`,
		`{"name": "x", "storage_options": {"location": "` + endpoint + `"}}`,
		`{"name": "x", "storage_options": {"aws_access_key_id": "AKIA", "aws_secret_access_key": "s"}}`,
		`{"name": "x", "storage_options": {"prefix": "rollout/b.x"}}`,
	} {
		for _, route := range []string{"/api/v1/rollouts", "/api/v1/datagen"} {
			status, code := errCode(t, w, "POST", route, body)
			require.Equal(t, http.StatusBadRequest, status, "%s %s", route, body)
			require.Equal(t, api.CodeInvalidRequest, code)
		}
		generic := strings.Replace(body, `"name": "x",`, `"name": "x", "schema": {"columns": [["id", "string"]]},`, 1)
		status, _ := errCode(t, w, "POST", "/api/v1/generic", generic)
		require.Equal(t, http.StatusBadRequest, status, generic)
	}
	require.Zero(t, hits.Load(), "the listener was never reached")
	status, _ := errCode(t, w, "GET", "/api/v1/rollouts/x", nil)
	require.Equal(t, http.StatusNotFound, status, "nothing was registered")
}

// Choosing where a store lives takes the admin token unless the operator allows the API token.
func TestStorageOptionsTakeTheAdminToken(t *testing.T) {
	c := newCluster(t)
	create := func(w *worker, token, name string) int {
		req := httptest.NewRequest("POST", "/api/v1/rollouts", strings.NewReader(`{"name": "`+name+`", "storage_options": {"location": "default", "prefix": "team-a"}}`))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		return rec.Code
	}
	w := c.worker("w1", func(d *api.Deps) { d.APIToken, d.AdminToken = "data", "admin" })
	require.Equal(t, http.StatusForbidden, create(w, "data", "a"))
	require.Equal(t, http.StatusUnauthorized, create(w, "other", "a"))
	require.Equal(t, http.StatusCreated, create(w, "admin", "a"), "the admin token opens the data routes too")
	open := c.worker("w2", func(d *api.Deps) { d.APIToken, d.AdminToken, d.CallerStorageOptions = "data", "admin", true })
	require.Equal(t, http.StatusCreated, create(open, "data", "b"))
	only := c.worker("w3", func(d *api.Deps) { d.APIToken = "data" })
	require.Equal(t, http.StatusCreated, create(only, "data", "c"), "with no admin token the API token is the admin's")
}

// metadata holds one JSON document on every path: an Arrow append whose metadata is not one is
// refused before anything is durable, and a value that reached storage some other way is served
// as a JSON string, never spliced into the answer.
func TestMetadataIsOneJSONDocumentOnEveryPath(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "m"}, nil))
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "metadata", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	strs := func(v ...string) arrow.Array {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(v, nil)
		return b.NewArray()
	}
	for _, bad := range []string{`{"a":1},"x":{"b":2}`, `{"a":1}]}`, `{`, `1 2`, ``} {
		ids, runs, meta := strs("bad"), strs("t"), strs(bad)
		rec := postArrow(w, "/api/v1/rollouts/m/records", ipcOf(t, schema, []arrow.Array{ids, runs, meta}))
		ids.Release()
		runs.Release()
		meta.Release()
		require.Equal(t, http.StatusBadRequest, rec.Code, "%q: %s", bad, rec.Body)
	}
	ids, runs, meta := strs("good"), strs("t"), strs(`{"k": [1, 2]}`)
	rec := postArrow(w, "/api/v1/rollouts/m/records", ipcOf(t, schema, []arrow.Array{ids, runs, meta}))
	ids.Release()
	runs.Release()
	meta.Release()
	require.Equal(t, http.StatusCreated, rec.Code, "%s", rec.Body)
	requireServesAndHolds(t, w, "m", "good")

	// A value stored below the API (an older server, a hand-written batch): still one JSON value.
	s, release, err := w.mgr.Acquire(context.Background(), catalog.KindRollout, "m")
	require.NoError(t, err)
	var user []arrow.Field
	for _, f := range s.Schema().Fields() {
		if !strings.HasPrefix(f.Name, "_") {
			user = append(user, f)
		}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(user, nil))
	for i, f := range user {
		switch f.Name {
		case "id":
			b.Field(i).(*array.StringBuilder).Append("raw")
		case "rollout_id", "problem_id":
			b.Field(i).(*array.StringBuilder).Append("t")
		case "metadata":
			b.Field(i).(*array.StringBuilder).Append(`{"a":1},"injected":{"b":2}`)
		default:
			if f.Nullable {
				b.Field(i).AppendNull()
			} else {
				b.Field(i).AppendEmptyValue()
			}
		}
	}
	raw := b.NewRecordBatch()
	b.Release()
	_, err = s.Append(context.Background(), raw)
	raw.Release()
	release()
	require.NoError(t, err)
	var got struct {
		Record map[string]any `json:"record"`
	}
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/m/records/raw", nil, &got))
	require.Equal(t, `{"a":1},"injected":{"b":2}`, got.Record["metadata"])
	require.NotContains(t, got.Record, "injected")
	var page api.RecordsPage
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/m/records?limit=10", nil, &page))
	require.Len(t, page.Records, 2)
}

// A plain web page cannot change anything: JSON routes take application/json only (415 for the
// text/plain and form bodies a page may send unasked), a cross-origin browser request that would
// change state is 403, and with --allowed-hosts a Host the server is not known by is 403.
func TestBrowsersAndUnknownHostsCannotReachTheAPI(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	send := func(w *worker, method, path, ct, body string, headers ...string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if ct != "" {
			req.Header.Set(echo.HeaderContentType, ct)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		if i := slices.Index(headers, "Host"); i >= 0 {
			req.Host = headers[i+1]
		}
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		var env api.ErrorBody
		_ = json.Unmarshal(rec.Body.Bytes(), &env)
		return rec.Code, env.Error.Code
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		for _, path := range []string{"/api/v1/rollouts", "/api/v1/generic", "/api/v1/datagen", "/api/v1/admin/rollout/a/maintenance"} {
			status, code := send(w, "POST", path, ct, `{"name": "csrf", "op": "cleanup_versions"}`)
			require.Equal(t, http.StatusUnsupportedMediaType, status, "%s %q", path, ct)
			require.Equal(t, api.CodeUnsupportedMediaType, code)
		}
	}
	status, _ := send(w, "POST", "/api/v1/rollouts", "application/json", `{"name": "csrf"}`, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, status)
	status, _ = send(w, "POST", "/api/v1/rollouts", "application/json", `{"name": "csrf"}`, "Origin", "http://evil.example")
	require.Equal(t, http.StatusForbidden, status, "Origin against Host")
	status, _ = send(w, "GET", "/api/v1/rollouts", "", "", "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusOK, status, "reads are safe methods")
	status, _ = send(w, "POST", "/api/v1/rollouts", "application/json", `{"name": "same"}`, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusCreated, status)

	only := c.worker("w2", func(d *api.Deps) { d.AllowedHosts = []string{"strata.internal", "127.0.0.1"} })
	status, _ = send(only, "GET", "/api/v1/health", "", "", "Host", "attacker.example:3000")
	require.Equal(t, http.StatusForbidden, status)
	status, _ = send(only, "GET", "/api/v1/health", "", "", "Host", "strata.internal:3000")
	require.Equal(t, http.StatusOK, status)
	status, _ = send(only, "GET", "/api/v1/health", "", "", "Host", "127.0.0.1")
	require.Equal(t, http.StatusOK, status)
}

// What a body may cost is bounded by the body: a datagen append of millions of empty events is
// refused at the first one (never decoded whole), an append over the event cap is 413, and a
// compressed Arrow body may decode to at most a few times its own size.
func TestDecodingCostsFollowTheBody(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen", map[string]any{"name": "d"}, nil))
	empty := `{"events":[` + strings.Repeat("{},", 2_000_000) + `{}]}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	status, code := errCode(t, w, "POST", "/api/v1/datagen/d/events", empty)
	runtime.ReadMemStats(&after)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, api.CodeInvalidRequest, code)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "the events were not all decoded")

	event := `{"event_id":"e%d","item_id":"i","root_item_id":"i","item_seq":%d,"checkpoint_id":"c","run_id":"r","writer_epoch":"w","event_type":"ITEM_CREATED","schema_version":2}`
	var b strings.Builder
	b.WriteString(`{"events":[`)
	for i := range datagen.MaxEventsPerAppend + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, event, i, i)
	}
	b.WriteString(`]}`)
	status, code = errCode(t, w, "POST", "/api/v1/datagen/d/events", b.String())
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	require.Equal(t, api.CodePayloadTooLarge, code)

	// A compressed Arrow body that decodes to far more than it is: 413.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "z"}, nil))
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 64 {
		sb.Append(fmt.Sprintf("id-%d", i))
	}
	ids := sb.NewArray()
	sb.Append(strings.Repeat("a", 1<<20))
	for range 63 {
		sb.Append(strings.Repeat("a", 1<<20))
	}
	runs := sb.NewArray()
	sb.Release()
	bomb := ipcOf(t, idRolloutSchema, []arrow.Array{ids, runs}, ipc.WithZstd())
	ids.Release()
	runs.Release()
	require.Less(t, len(bomb), 1<<20, "64 MiB of text compresses to a small body")
	rec := postArrow(w, "/api/v1/rollouts/z/records", bomb)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
	requireServesAndHolds(t, w, "z")
}

// What a compressed Arrow body decodes to is reserved in the request-memory budget before it is
// allocated: a body whose decoded buffers do not fit beside it is refused with 503, and a
// smaller one is served.
func TestDecodedBytesAreReservedBeforeTheyAreAllocated(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.MaxInflightRequestBytes = 1 << 20 })
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "b"}, nil))
	body := func(rows int) []byte {
		ids, runs := array.NewStringBuilder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator)
		defer ids.Release()
		defer runs.Release()
		for i := range rows {
			raw := make([]byte, 3<<10)
			_, _ = rand.Read(raw) // base64 of random bytes: compresses to about 75%
			ids.Append(fmt.Sprintf("id-%d", i))
			runs.Append(base64.StdEncoding.EncodeToString(raw))
		}
		a, b := ids.NewArray(), runs.NewArray()
		defer a.Release()
		defer b.Release()
		return ipcOf(t, idRolloutSchema, []arrow.Array{a, b}, ipc.WithZstd())
	}
	big := body(160) // decoded ~650 KB beside a body of ~490 KB reserved twice
	rec := postArrow(w, "/api/v1/rollouts/b/records", big)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, "%d-byte body: %s", len(big), rec.Body)
	var env api.ErrorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &env))
	require.Equal(t, api.CodeOverloaded, env.Error.Code)
	small := body(16)
	rec = postArrow(w, "/api/v1/rollouts/b/records", small)
	require.Equal(t, http.StatusCreated, rec.Code, "%s", rec.Body)
}
