package api_test

// The adversarial suite: requests an attacker or a buggy client would send. Each test is named
// after the rule it proves; every one checks the answer, that nothing of a rejected request is
// visible, and that the worker still serves afterwards.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/internal/fakemaint"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/workflows"
)

var idRolloutSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
}, nil)

// rawStringArray builds a utf8 array from raw offsets and data, unchecked (as a hostile client's
// writer could).
func rawStringArray(offsets []int32, data []byte) arrow.Array {
	ob := make([]byte, 4*len(offsets))
	for i, o := range offsets {
		binary.LittleEndian.PutUint32(ob[4*i:], uint32(o))
	}
	d := array.NewData(arrow.BinaryTypes.String, len(offsets)-1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(ob), memory.NewBufferBytes(data)}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// ipcOf writes cols (named as schema) as one Arrow IPC stream, unvalidated; opts may add
// compression.
func ipcOf(t *testing.T, schema *arrow.Schema, cols []arrow.Array, opts ...ipc.Option) []byte {
	t.Helper()
	rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, append([]ipc.Option{ipc.WithSchema(schema)}, opts...)...)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func postArrow(w *worker, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.Header.Set(echo.HeaderContentType, api.MIMEArrowStream)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	return rec
}

// requireServesAndHolds checks that the worker still appends and reads, and that the store holds
// exactly the ids want (nothing of a rejected request).
func requireServesAndHolds(t *testing.T, w *worker, store string, want ...string) {
	t.Helper()
	probe := fmt.Sprintf("probe-%d", len(want))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/"+store+"/records",
		map[string]any{"records": []map[string]any{{"id": probe, "rollout_id": "t"}}}, nil))
	var page api.RecordsPage
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/"+store+"/records?limit=1000", nil, &page))
	var got []string
	for _, r := range page.Records {
		var row struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(r, &row))
		if row.ID != probe {
			got = append(got, row.ID)
		}
	}
	require.ElementsMatch(t, want, got)
	require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/rollouts/"+store+"/records/"+probe, nil, nil))
}

func TestArrowAppendIsValidatedInFullBeforeItIsDurable(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	good := func() arrow.Array {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues([]string{"t", "t"}, nil)
		return b.NewArray()
	}
	cases := map[string][]arrow.Array{
		"offsets going backwards": {rawStringArray([]int32{0, 3, 1}, []byte("abc")), good()},
		"invalid UTF-8 id":        {rawStringArray([]int32{0, 2, 3}, []byte{0xff, 0xfe, 'x'}), good()},
		"empty id":                {rawStringArray([]int32{0, 0, 1}, []byte("x")), good()},
	}
	for name, cols := range cases {
		body := ipcOf(t, idRolloutSchema, cols)
		for _, col := range cols {
			col.Release()
		}
		rec := postArrow(w, "/api/v1/rollouts/a/records", body)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", name, rec.Body.String())
		require.Contains(t, rec.Body.String(), `\"id\"`, "%s: the message names the column", name)
		require.NotContains(t, rec.Body.String(), "runtime error", name)
	}
	// Two id columns: ambiguous, refused.
	dup := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String}}, nil)
	a, b, r := good(), good(), good()
	rec := postArrow(w, "/api/v1/rollouts/a/records", ipcOf(t, dup, []arrow.Array{a, b, r}))
	a.Release()
	b.Release()
	r.Release()
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	requireServesAndHolds(t, w, "a")
}

// recordBodyOffset returns where the body of an IPC stream's first record batch starts: after
// the schema message and the batch's metadata.
func recordBodyOffset(t *testing.T, stream []byte) int {
	t.Helper()
	off := 0
	for i := 0; i < 2; i++ {
		require.Equal(t, uint32(0xFFFFFFFF), binary.LittleEndian.Uint32(stream[off:]))
		off += 8 + int(binary.LittleEndian.Uint32(stream[off+4:]))
	}
	return off
}

func TestDeclaredLengthsCannotMakeTheServerAllocate(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))

	// 8 bytes: a continuation marker and a 2 GiB metadata length.
	// A stream that declares more than it holds is malformed: 400, not 413.
	bomb := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}
	rec := postArrow(w, "/api/v1/rollouts/a/records", bomb)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())

	// A real schema message, then a record batch whose metadata declares a 2^40-byte body.
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues([]string{"x1", "x2"}, nil)
	ids := b.NewArray()
	b.Release()
	defer ids.Release()
	stream := ipcOf(t, idRolloutSchema, []arrow.Array{ids, ids})
	declared := patchBodyLength(t, stream, 1<<40)
	rec = postArrow(w, "/api/v1/rollouts/a/records", declared)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())

	// LZ4-compressed buffers whose uncompressed-length prefix says 2^40 bytes.
	lz := ipcOf(t, idRolloutSchema, []arrow.Array{ids, ids}, ipc.WithLZ4())
	at := recordBodyOffset(t, lz)
	binary.LittleEndian.PutUint64(lz[at:], 1<<40)
	rec = postArrow(w, "/api/v1/rollouts/a/records", lz)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())

	// Garbage and truncated streams are 400s.
	for _, body := range [][]byte{[]byte("not arrow at all"), stream[:len(stream)/2], {0xff, 0xff, 0xff, 0xff}} {
		rec = postArrow(w, "/api/v1/rollouts/a/records", body)
		require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
		require.NotContains(t, rec.Body.String(), "runtime error")
	}
	requireServesAndHolds(t, w, "a")
}

// patchBodyLength rewrites the bodyLength field of the stream's record batch message. The field
// is found by value: the message's real body length, as an int64, in its metadata.
func patchBodyLength(t *testing.T, stream []byte, n int64) []byte {
	t.Helper()
	out := bytes.Clone(stream)
	schemaEnd := 8 + int(binary.LittleEndian.Uint32(out[4:]))
	metaLen := int(binary.LittleEndian.Uint32(out[schemaEnd+4:]))
	meta := out[schemaEnd+8 : schemaEnd+8+metaLen]
	bodyLen := int64(len(out)) - int64(schemaEnd+8+metaLen) - 8 // the end-of-stream marker
	var want [8]byte
	binary.LittleEndian.PutUint64(want[:], uint64(bodyLen))
	i := bytes.Index(meta, want[:])
	require.GreaterOrEqual(t, i, 0, "body length %d not found in the metadata", bodyLen)
	binary.LittleEndian.PutUint64(meta[i:], uint64(n))
	return out
}

func TestEveryAcceptedIDCanBeAddressed(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	ids := []string{"dir/x", "50%", "%", "a b", "a%2Fb", "ü/é?#", "..", "a\x00b", " "}
	for _, id := range ids {
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/a/records",
			map[string]any{"records": []map[string]any{{"id": id, "rollout_id": "t", "content": "c-" + id}}}, nil), id)
	}
	for _, id := range ids {
		path := "/api/v1/rollouts/a/records/" + url.PathEscape(id)
		var got api.RecordResponse
		require.Equal(t, http.StatusOK, w.do(t, "GET", path, nil, &got), id)
		var row struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(got.Record, &row), "%s: %s", id, got.Record)
		require.Equal(t, id, row.ID)
		var del api.DeleteResponse
		require.Equal(t, http.StatusOK, w.do(t, "DELETE", path, nil, &del), id)
		require.Equal(t, id, del.ID)
		require.Equal(t, http.StatusOK, w.do(t, "GET", path, nil, &got), id)
		require.Equal(t, "null", string(got.Record), "%q was deleted", id)
	}
	// Ids that could never be addressed are refused whole.
	for _, body := range []string{
		`{"records": [{"id": "", "rollout_id": "t"}]}`,
		`{"records": [{"id": "ok", "rollout_id": "t"}, {"id": "", "rollout_id": "t"}]}`,
		"{\"records\": [{\"id\": \"\xff\", \"rollout_id\": \"t\"}]}",
	} {
		status, code := errCode(t, w, "POST", "/api/v1/rollouts/a/records", body)
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Equal(t, api.CodeInvalidRequest, code)
	}
	requireServesAndHolds(t, w, "a")
}

// rawRequest sends head (request line and headers) and body on a new connection, then waits at
// most wait for the response; it returns the status (0: none came) and whether the server then
// closed the connection.
func rawRequest(t *testing.T, addr, head, body string, wait time.Duration) (int, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "%s\r\n\r\n%s", head, body)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, false
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.StatusCode, errors.Is(err, io.EOF)
}

func TestNoRouteWaitsForABodyThatNeverCompletes(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.APIToken = "secret"; d.BodyIdleTimeout = 200 * time.Millisecond })
	srv := httptest.NewServer(w.e)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, head := range []string{
		"POST /api/v1/rollouts/a/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000", // unauthenticated
		"POST /api/v1/admin/rollout/a/maintenance HTTP/1.1\r\nHost: x\r\nContent-Length: 1000",                          // admin, unauthenticated
		"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000",                                                // open route
		"POST /api/v1/rollouts/a/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\nContent-Length: 1000",
		"POST /api/v1/rollouts/a/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked",
	} {
		status, closed := rawRequest(t, addr, head, "{\"records\":", 5*time.Second)
		require.NotZero(t, status, "no answer to %q", head)
		require.True(t, closed, "the connection of %q stays open", head)
	}
}

func TestAdminRoutesNeedATokenWhenOnlyTheAPITokenIsSet(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.APIToken = "secret" })
	post := func(token string) int {
		req := httptest.NewRequest("POST", "/api/v1/admin/rollout/a/maintenance", strings.NewReader(`{"op":"cleanup_versions"}`))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		if token != "" {
			req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		return rec.Code
	}
	require.Equal(t, http.StatusUnauthorized, post(""))
	require.Equal(t, http.StatusUnauthorized, post("wrong"))
	require.NotEqual(t, http.StatusUnauthorized, post("secret"))
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/health", nil))
	require.Equal(t, http.StatusOK, rec.Code, "health stays open")
}

func TestBadInputIsNever500(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) {
		d.BodyLimit = "1K"
		d.Maintenance = &fakemaint.Maintainer{QueueFunc: func(workflows.StoreRef, workflows.Request) (string, error) {
			return "", context.DeadlineExceeded // Temporal does not answer
		}}
	})
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	cases := []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/api/v1/rollouts", `{"name": "n1", "storage_options": {"k": "a\u0000b"}}`, 400},
		{"POST", "/api/v1/rollouts", "{\"name\": \"n2\", \"storage_options\": {\"k\": \"\xff\"}}", 400},
		{"POST", "/api/v1/generic", `{"name": "g1", "schema": {"columns": [["id", "string"], ["a\u0000b", "int64"]]}}`, 400},
		{"GET", "/api/v1/rollouts?cursor=a%00b", "", 400},
		{"GET", "/api/v1/rollouts?cursor=%ff", "", 400},
		{"POST", "/api/v1/rollouts/a/records", `{"records": [null]}`, 400},
		{"POST", "/api/v1/rollouts/a/records", `{"records": [{"id": "x", "id": "y", "rollout_id": "t"}]}`, 400},
		{"POST", "/api/v1/admin/rollout/a/maintenance", `{"op": "merge_wal"}`, 503},
	}
	for _, tc := range cases {
		status, code := errCode(t, w, tc.method, tc.path, tc.body)
		require.Equal(t, tc.want, status, "%s %s %s", tc.method, tc.path, tc.body)
		require.NotEqual(t, api.CodeInternal, code)
	}
	// A chunked body over the limit is 413, as a declared one is.
	req := httptest.NewRequest("POST", "/api/v1/rollouts/a/records", io.MultiReader(strings.NewReader(`{"records": [{"id": "x", "rollout_id": "`),
		strings.NewReader(strings.Repeat("y", 4096)), strings.NewReader(`"}]}`)))
	req.ContentLength = -1
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
	// A multipart metadata part that is not strict JSON is 400.
	for _, meta := range []string{`{"records": [null]}`, `{"records": []} trailing`, "{\"records\": [{\"id\": \"\xff\", \"rollout_id\": \"t\"}]}",
		`{"records": [{"id": "x", "rollout_id": "t", "rollout_id": "u"}]}`} {
		ct, body := multipartBody(t, [2]string{"metadata", meta})
		rec := postMultipart(w, "/api/v1/rollouts/a/records", ct, body)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", meta, rec.Body.String())
	}
	requireServesAndHolds(t, w, "a")
}

func TestRequestMemoryIsBoundedPerProcess(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.MaxInflightRequestBytes = 1 << 20 })
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	srv := httptest.NewServer(w.e)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	// A body that declares 1 GiB and trickles holds only what it sent: others are served.
	trickle, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer trickle.Close()
	_, err = fmt.Fprintf(trickle, "POST /api/v1/rollouts/a/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n{\"records\": [")
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	small := `{"records": [{"id": "s", "rollout_id": "` + strings.Repeat("z", 200000) + `"}]}`
	resp, err := http.Post(srv.URL+"/api/v1/rollouts/a/records", echo.MIMEApplicationJSON, strings.NewReader(small))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "the trickling body does not hold the budget")
	trickle.Close()

	// One request holds about 600 KB of budget (twice the 300 KB it sent of a body it never
	// finishes)...
	hold, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer hold.Close()
	_, err = fmt.Fprintf(hold, "POST /api/v1/rollouts/a/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 400000\r\n\r\n{\"records\": [{\"id\": \"h\", \"rollout_id\": \"%s", strings.Repeat("x", 300000))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	// ...so another of 300 KB does not fit: 503, answered on its headers, before its body is read.
	status, closed := rawRequest(t, addr, "POST /api/v1/rollouts/a/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 300000", "", 5*time.Second)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.True(t, closed, "the unread body is not waited for")
	hold.Close()
	big := `{"records": [{"id": "b", "rollout_id": "` + strings.Repeat("y", 300000) + `"}]}`
	// Once it is gone, the same request is served.
	require.Eventually(t, func() bool {
		resp, err := http.Post(srv.URL+"/api/v1/rollouts/a/records", echo.MIMEApplicationJSON, strings.NewReader(big))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusCreated
	}, 5*time.Second, 20*time.Millisecond)
}

func TestStorageFaultsAnswer503AndShowInHealth(t *testing.T) {
	c := newCluster(t)
	var faults *objstoretest.Faulty
	c.wrap = func(s objstore.Store) objstore.Store { faults = objstoretest.NewFaulty(s); return faults }
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	for _, errno := range []error{syscall.ENOSPC, syscall.EIO, syscall.EACCES} {
		faults.Reset()
		faults.AddRule(objstoretest.Rule{Err: &os.PathError{Op: "write", Path: "/secret/server/path", Err: errno}})
		var env api.ErrorBody
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/api/v1/rollouts/a/records", strings.NewReader(`{"records": [{"id": "x", "rollout_id": "t"}]}`))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		w.e.ServeHTTP(rec, req)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, "%v: %s", errno, rec.Body.String())
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &env))
		require.Equal(t, api.CodeStorageUnavailable, env.Error.Code)
		require.Contains(t, env.Error.Message, `"a"`, "the message names the store")
		require.NotContains(t, env.Error.Message, "/secret", "never the server's path")
		require.NotEmpty(t, rec.Header().Get("Retry-After"))

		var health api.HealthResponse
		require.Eventually(t, func() bool { // a probe result is reused for a second
			return w.do(t, "GET", "/api/v1/health", nil, &health) == http.StatusServiceUnavailable && health.Storage != "ok"
		}, 5*time.Second, 50*time.Millisecond)
		require.Equal(t, "ok", health.Catalog)
		require.NotContains(t, health.Storage, "/secret", "health is open: no server paths")
	}
	faults.Reset()
	var health api.HealthResponse
	require.Eventually(t, func() bool {
		return w.do(t, "GET", "/api/v1/health", nil, &health) == http.StatusOK && health.Storage == "ok"
	}, 5*time.Second, 50*time.Millisecond)
	requireServesAndHolds(t, w, "a")
}

func TestAHungStorageCallAnswers503WithinTheRequestDeadline(t *testing.T) {
	c := newCluster(t)
	var faults *objstoretest.Faulty
	c.wrap = func(s objstore.Store) objstore.Store { faults = objstoretest.NewFaulty(s); return faults }
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	stuck := make(chan struct{})
	faults.AddRule(objstoretest.Rule{Stuck: stuck}) // every call blocks, deaf to its context
	released := false
	release := func() { // the disk comes back: the abandoned calls finish and free what they hold
		if !released {
			released = true
			faults.Reset()
			close(stuck)
			mem := c.mem.(*memory.CheckedAllocator)
			require.Eventually(t, func() bool { return mem.CurrentAlloc() == 0 }, 30*time.Second, 10*time.Millisecond)
		}
	}
	defer release()
	srv := httptest.NewServer(api.WithDeadline(w.e, 300*time.Millisecond))
	defer srv.Close()
	start := time.Now()
	resp, err := http.Post(srv.URL+"/api/v1/rollouts/a/records", echo.MIMEApplicationJSON, strings.NewReader(`{"records": [{"id": "x", "rollout_id": "t"}]}`))
	require.NoError(t, err)
	var env api.ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, api.CodeDeadlineExceeded, env.Error.Code, "its own code: the append may still become durable")
	require.Empty(t, resp.Header.Get("Retry-After"), "no invitation to send it again blindly")
	faults.Reset()
	// Health answers within its own bound while a probe is stuck too.
	rec := httptest.NewRecorder()
	faults.AddRule(objstoretest.Rule{Stuck: stuck})
	start = time.Now()
	w.e.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/health", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Less(t, time.Since(start), 5*time.Second)
	release()
}

func TestAFencedWorkerSaysSoOnceAndReportsItselfUnhealthy(t *testing.T) {
	c := newCluster(t)
	old := c.worker("same")
	require.Equal(t, http.StatusCreated, old.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	add := func(w *worker, id string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/api/v1/rollouts/a/records", strings.NewReader(`{"records": [{"id": "`+id+`", "rollout_id": "t"}]}`))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		return rec
	}
	require.Equal(t, http.StatusCreated, add(old, "r1").Code)
	newer := c.worker("same") // the same instance id: it claims the shard
	require.Equal(t, http.StatusCreated, add(newer, "r2").Code)
	for range 3 {
		rec := add(old, "r3")
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
		var env api.ErrorBody
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &env))
		require.Equal(t, api.CodeFenced, env.Error.Code)
		require.Contains(t, env.Error.Message, "instance-id")
		require.Empty(t, rec.Header().Get("Retry-After"), "retrying here cannot help")
	}
	var health api.HealthResponse
	require.Equal(t, http.StatusServiceUnavailable, old.do(t, "GET", "/api/v1/health", nil, &health))
	require.Equal(t, 1, health.FencedStores)
	require.Equal(t, http.StatusOK, newer.do(t, "GET", "/api/v1/health", nil, &health))
}

// Payload parts land in the binary_payload column whatever their order, next to records without
// one and records with an inline (base64) payload.
func TestMultipartPayloadsRoundTripInAnyOrder(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "m"}, nil))
	meta := `{"records": [{"id": "%[1]s0", "rollout_id": "t", "payload_size": 3}, {"id": "%[1]s1", "rollout_id": "t"},
		{"id": "%[1]s2", "rollout_id": "t", "payload_size": 0}, {"id": "%[1]s3", "rollout_id": "t", "payload_size": 5}%[2]s]}`
	orders := map[string][][2]string{
		"in-order":     {{"0", "abc"}, {"2", ""}, {"3", "defgh"}},
		"out-of-order": {{"3", "defgh"}, {"0", "abc"}, {"2", ""}},
	}
	for name, parts := range orders {
		for _, inline := range []string{"", `, {"id": "` + name + `4", "rollout_id": "t", "binary_payload": "aW5saW5l"}`} {
			ct, body := multipartBody(t, append([][2]string{{"metadata", fmt.Sprintf(meta, name, inline)}}, parts...)...)
			rec := postMultipart(w, "/api/v1/rollouts/m/records", ct, body)
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
			want := map[string]string{"0": "abc", "2": "", "3": "defgh"}
			if inline != "" {
				want["4"] = "inline"
			}
			for suffix, payload := range want {
				var blob []byte
				require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/m/records/"+name+suffix+"/blob", nil, &blob), name+suffix)
				require.Equal(t, payload, string(blob), name+suffix)
			}
			status, _ := errCode(t, w, "GET", "/api/v1/rollouts/m/records/"+name+"1/blob", nil)
			require.Equal(t, http.StatusNotFound, status, "record 1 has no payload")
		}
	}
}

// Runtime profiles are served only when enabled, and only behind the admin token.
func TestProfilesAreBehindTheAdminToken(t *testing.T) {
	c := newCluster(t)
	get := func(w *worker, path, token string) int {
		req := httptest.NewRequest("GET", path, nil)
		if token != "" {
			req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		return rec.Code
	}
	on := c.worker("w1", func(d *api.Deps) { d.Pprof, d.AdminToken = true, "admin" })
	require.Equal(t, http.StatusOK, get(on, "/api/v1/admin/debug/pprof/heap?gc=1", "admin"))
	require.Equal(t, http.StatusOK, get(on, "/api/v1/admin/debug/pprof/", "admin"))
	require.Equal(t, http.StatusUnauthorized, get(on, "/api/v1/admin/debug/pprof/heap", ""))
	off := c.worker("w2", func(d *api.Deps) { d.AdminToken = "admin" })
	require.Equal(t, http.StatusNotFound, get(off, "/api/v1/admin/debug/pprof/heap", "admin"))

	// The command line shows flag names, never their values (tokens, the database password).
	saved := os.Args
	os.Args = []string{"strata", "serve", "--api-token=SECRET-1", "--database-url", "postgres://u:SECRET-2@db/strata"}
	defer func() { os.Args = saved }()
	req := httptest.NewRequest("GET", "/api/v1/admin/debug/pprof/cmdline", nil)
	req.Header.Set(echo.HeaderAuthorization, "Bearer admin")
	rec := httptest.NewRecorder()
	on.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), "--api-token")
	require.NotContains(t, rec.Body.String(), "SECRET")
}

// A method a known path does not serve answers 405 with the methods it does serve (Allow), on
// data and admin routes as on the open ones, authenticated or not; a path no route serves
// answers 404. Both with the error envelope.
func TestAWrongMethodOnAKnownPathIs405NotFound404(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.APIToken = "secret" })
	send := func(method, path, token string) (*httptest.ResponseRecorder, api.ErrorBody) {
		req := httptest.NewRequest(method, path, strings.NewReader(`{}`))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		if token != "" {
			req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		var body api.ErrorBody
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "%s %s: %s", method, path, rec.Body)
		return rec, body
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/api/v1/rollouts/a", "GET"},
		{"PATCH", "/api/v1/rollouts/a/records/x", "DELETE"},
		{"PUT", "/api/v1/rollouts", "POST"},
		{"DELETE", "/api/v1/generic/a/rows", "GET"},
		{"PUT", "/api/v1/datagen/a/events", "POST"},
		{"GET", "/api/v1/admin/rollout/a/maintenance", "POST"},
		{"POST", "/api/v1/health", "GET"},
	} {
		for _, token := range []string{"secret", ""} {
			rec, body := send(tc.method, tc.path, token)
			require.Equal(t, http.StatusMethodNotAllowed, rec.Code, "%s %s (token %q)", tc.method, tc.path, token)
			require.Equal(t, api.CodeMethodNotAllow, body.Error.Code)
			require.Contains(t, rec.Header().Get("Allow"), tc.allow, "%s %s", tc.method, tc.path)
		}
	}
	for _, path := range []string{"/api/v1/no/such/thing", "/api/v1/rollouts/a/nothing", "/api/v1/admin/nothing", "/api/v1/admin/debug/pprof/heap"} {
		rec, body := send("GET", path, "secret")
		require.Equal(t, http.StatusNotFound, rec.Code, path)
		require.Equal(t, api.CodeNotFound, body.Error.Code, path)
	}
	// Routes keep their middleware: a known route still wants the token.
	rec, body := send("GET", "/api/v1/rollouts/a", "")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Equal(t, api.CodeUnauthorized, body.Error.Code)
	rec, _ = send("POST", "/api/v1/admin/rollout/a/maintenance", "")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
}

// HEAD on a path GET serves answers as GET would, status and headers, without a body: open,
// data and admin routes alike, with the data routes' auth and a missing store's 404.
func TestAHeadRequestAnswersLikeGetWithoutABody(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.APIToken = "secret" })
	send := func(method, path, token, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		if token != "" {
			req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		return rec
	}
	require.Equal(t, http.StatusCreated, send("POST", "/api/v1/rollouts", "secret", `{"name":"a"}`).Code)
	head := func(path, token string) *httptest.ResponseRecorder { return send(http.MethodHead, path, token, "") }
	for _, tc := range []struct {
		path, token string
		code        int
	}{
		{"/api/v1/health", "", http.StatusOK},
		{"/metrics", "", http.StatusOK},
		{"/api/v1/rollouts/a", "secret", http.StatusOK},
		{"/api/v1/rollouts/a/records", "secret", http.StatusOK},
		{"/api/v1/rollouts/missing", "secret", http.StatusNotFound},
		{"/api/v1/rollouts/a", "", http.StatusUnauthorized},
		{"/api/v1/admin/status", "secret", http.StatusOK},
	} {
		rec := head(tc.path, tc.token)
		require.Equal(t, tc.code, rec.Code, "HEAD %s", tc.path)
		require.NotEmpty(t, rec.Header().Get(echo.HeaderContentType), "HEAD %s", tc.path)
	}
	// A HEAD request over a real connection gets GET's headers and no body.
	srv := httptest.NewServer(w.e)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodHead, srv.URL+"/api/v1/rollouts/a", nil)
	require.NoError(t, err)
	req.Header.Set(echo.HeaderAuthorization, "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, body)
	require.Contains(t, resp.Header.Get(echo.HeaderContentType), "application/json")
}
