package main

// The adversarial suite: a real `strata serve` process, reached only through its HTTP port with
// the API token, as an attacker holding that token would reach it. Each class of attack the
// server must withstand has a case here: requests to hosts the operator did not configure,
// filters that cost more than linear time, bodies that decode to more than they are, stalled
// and trickling bodies, values that could corrupt an answer, catalog rows that could not work,
// browsers on other sites, and answers that leak the deployment.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/predicate"
)

// hostile is a running server and a client holding its API token.
type hostile struct {
	t     *testing.T
	base  string
	addr  string
	token string
	proc  *clusterProcess
}

func startHostileServer(t *testing.T, extraEnv ...string) *hostile {
	port, err := testenv.FreePort()
	require.NoError(t, err)
	h := &hostile{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), addr: fmt.Sprintf("127.0.0.1:%d", port), token: "data-token"}
	h.proc = &clusterProcess{t: t, args: []string{"serve"}, dir: t.TempDir(),
		env: append([]string{"STRATA_DATABASE_URL=" + testenv.Database(t), "STRATA_DATA_URL=file://" + t.TempDir(),
			"STRATA_INSTANCE_ID=adversarial", fmt.Sprintf("STRATA_LISTEN_ADDR=127.0.0.1:%d", port),
			"STRATA_API_TOKEN=" + h.token, "STRATA_ADMIN_TOKEN=admin-token", "STRATA_PPROF=true",
			"STRATA_FLUSH_INTERVAL=1h", "STRATA_LOG_LEVEL=error"}, extraEnv...)}
	h.proc.start()
	t.Cleanup(h.proc.stop)
	waitHealthy(t, h.base)
	return h
}

// do sends one request with the API token; it returns the status and the error code (if any).
func (h *hostile) do(method, path, contentType string, body []byte, headers ...string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, bytes.NewReader(body))
	require.NoError(h.t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(data, &env)
	return resp.StatusCode, env.Error.Code
}

func (h *hostile) json(method, path, body string) (int, string) {
	return h.do(method, path, "application/json", []byte(body))
}

// cpuSeconds is the server process's CPU time so far (user + system, from /proc).
func (h *hostile) cpuSeconds() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.proc.cmd.Process.Pid))
	require.NoError(h.t, err)
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // clock ticks (USER_HZ = 100 on Linux)
}

// rssBytes is the server process's resident memory.
func (h *hostile) rssBytes() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.proc.cmd.Process.Pid))
	require.NoError(h.t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	h.t.Fatal("no VmRSS")
	return 0
}

func TestAdversarialClassesAgainstARealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	h := startHostileServer(t, "STRATA_REQUEST_TIMEOUT=2s", "STRATA_BODY_IDLE_TIMEOUT=500ms", "STRATA_MAX_INFLIGHT_REQUEST_BYTES=67108864")
	status, _ := h.json("POST", "/api/v1/rollouts", `{"name": "a"}`)
	require.Equal(t, http.StatusCreated, status)

	t.Run("no request reaches a host the operator did not configure", func(t *testing.T) {
		var hits atomic.Int64
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				hits.Add(1)
				c.Close()
			}
		}()
		status, code := h.json("POST", "/api/v1/rollouts", `{"name": "ssrf", "storage_options": {"bucket": "b", "endpoint": "http://`+ln.Addr().String()+`"}}`)
		require.Equal(t, http.StatusForbidden, status, "choosing where a store lives takes the admin token")
		require.Equal(t, "FORBIDDEN", code)
		h.token = "admin-token" // even the admin cannot name a host, a bucket or a credential
		defer func() { h.token = "data-token" }()
		for _, opts := range []string{
			`{"bucket": "b", "endpoint": "http://` + ln.Addr().String() + `", "path_style": "true"}`,
			`{"bucket": "any-bucket-the-role-can-reach"}`, `{"endpoint": "http://169.254.169.254"}`,
			`{"location": "http://` + ln.Addr().String() + `"}`, `{"prefix": "rollout/a.0123456789abcdef"}`,
			`{"prefix": "` + strings.Repeat("p", 300) + `"}`, `{"prefix": "a b"}`, `{"aws_secret_access_key": "x"}`,
		} {
			status, code := h.json("POST", "/api/v1/rollouts", `{"name": "ssrf", "storage_options": `+opts+`}`)
			require.Equal(t, http.StatusBadRequest, status, opts)
			require.Equal(t, "INVALID_REQUEST", code)
		}
		require.Zero(t, hits.Load())
		status, _ = h.do("GET", "/api/v1/rollouts/ssrf", "", nil)
		require.Equal(t, http.StatusNotFound, status, "nothing was registered")
	})

	t.Run("filters cost linear time and stop with the request", func(t *testing.T) {
		status, _ := h.json("POST", "/api/v1/rollouts", `{"name": "f"}`)
		require.Equal(t, http.StatusCreated, status)
		value := strings.Repeat("a", 63) + "b"
		status, _ = h.json("POST", "/api/v1/rollouts/f/records?flush=true", `{"records": [{"id": "x", "rollout_id": "`+value+`"}]}`)
		require.Equal(t, http.StatusCreated, status)
		for _, pattern := range predicate.AdversarialLikePatterns() {
			start := time.Now()
			status, _ := h.do("GET", "/api/v1/rollouts/f/records?filters="+urlQuery("rollout_id LIKE '"+pattern+"'"), "", nil)
			require.Equal(t, http.StatusOK, status, pattern)
			require.Less(t, time.Since(start), time.Second, pattern)
		}
		long := "rollout_id = 'x'" + strings.Repeat(" OR rollout_id = 'x'", predicate.MaxTerms)
		status, code := h.do("GET", "/api/v1/rollouts/f/records?filters="+urlQuery(long), "", nil)
		require.Equal(t, http.StatusBadRequest, status, "a predicate past the term cap")
		require.Equal(t, "INVALID_REQUEST", code)

		// A costly but legal scan: 256 values of 64 KiB against a 1 KiB pattern of '_' runs.
		// The request deadline (2 s) answers, and the server's CPU stops with it.
		status, _ = h.json("POST", "/api/v1/rollouts", `{"name": "slow"}`)
		require.Equal(t, http.StatusCreated, status)
		big := strings.Repeat("a", 64<<10)
		for batch := range 8 {
			var b strings.Builder
			b.WriteString(`{"records": [`)
			for i := range 32 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"id": "r%d-%d", "rollout_id": "%s"}`, batch, i, big)
			}
			b.WriteString(`]}`)
			status, _ := h.json("POST", "/api/v1/rollouts/slow/records?flush=true", b.String())
			require.Equal(t, http.StatusCreated, status)
		}
		costly := "rollout_id LIKE '%" + strings.Repeat("a_", 500) + "b%'"
		start := time.Now()
		status, code = h.do("GET", "/api/v1/rollouts/slow/records?filters="+urlQuery(costly), "", nil)
		require.Less(t, time.Since(start), 5*time.Second, "answered at the deadline")
		require.Equal(t, http.StatusServiceUnavailable, status, "16 G character comparisons take longer than 2 s")
		require.Equal(t, "DEADLINE_EXCEEDED", code)
		time.Sleep(500 * time.Millisecond) // the context's end reaches the scan
		before := h.cpuSeconds()
		time.Sleep(2 * time.Second)
		require.Less(t, h.cpuSeconds()-before, 0.5, "the server keeps burning CPU after answering")
	})

	t.Run("decoding costs follow the body", func(t *testing.T) {
		status, _ := h.json("POST", "/api/v1/datagen", `{"name": "d"}`)
		require.Equal(t, http.StatusCreated, status)
		empty := []byte(`{"events":[` + strings.Repeat("{},", 2_000_000) + `{}]}`)
		before := h.rssBytes()
		status, code := h.do("POST", "/api/v1/datagen/d/events", "application/json", empty)
		require.Equal(t, http.StatusBadRequest, status)
		require.Equal(t, "INVALID_REQUEST", code)
		require.Less(t, h.rssBytes()-before, int64(4*len(empty)), "2M empty events are refused at the first")

		bomb := compressedBomb(t)
		status, code = h.do("POST", "/api/v1/rollouts/a/records", "application/vnd.apache.arrow.stream", bomb)
		require.Equal(t, http.StatusRequestEntityTooLarge, status)
		require.Equal(t, "PAYLOAD_TOO_LARGE", code)
		status, _ = h.do("POST", "/api/v1/rollouts/a/records", "application/vnd.apache.arrow.stream", bomb[:len(bomb)/2])
		require.Equal(t, http.StatusBadRequest, status, "a truncated stream is malformed")
	})

	t.Run("a trickling body holds only what it sent", func(t *testing.T) {
		conn, err := net.Dial("tcp", h.addr)
		require.NoError(t, err)
		defer conn.Close()
		fmt.Fprintf(conn, "POST /api/v1/rollouts/a/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n{\"records\": [", h.token)
		time.Sleep(100 * time.Millisecond)
		record := `{"records": [{"id": "t", "rollout_id": "t", "content": "` + strings.Repeat("t", 20<<20) + `"}]}`
		status, _ := h.json("POST", "/api/v1/rollouts/a/records", record)
		require.Equal(t, http.StatusCreated, status, "a 20 MB append beside a trickling 1 GiB declaration")
	})

	t.Run("a stalled body is 408 on every route", func(t *testing.T) {
		for _, c := range []struct{ path, ct, body string }{
			{"/api/v1/rollouts", "application/json", `{"name": "x`},
			{"/api/v1/rollouts/a/records", "application/json", `{"records": [{"id`},
			{"/api/v1/rollouts/a/records", "multipart/form-data; boundary=zz", "--zz\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{"},
			{"/api/v1/rollouts/a/records", "application/vnd.apache.arrow.stream", "\xff\xff\xff\xff"},
			{"/api/v1/admin/rollout/a/maintenance", "application/json", `{"op": "`},
		} {
			token := h.token
			if strings.Contains(c.path, "/admin/") {
				token = "admin-token"
			}
			for _, framing := range []string{"Content-Length: 100000", "Transfer-Encoding: chunked"} {
				body := c.body
				if strings.HasPrefix(framing, "Transfer") {
					body = fmt.Sprintf("%x\r\n%s\r\n", len(c.body), c.body)
				}
				head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\n%s", c.path, token, c.ct, framing)
				require.Equal(t, http.StatusRequestTimeout, rawStatus(t, h.addr, head, body), "%s %s %s", c.path, c.ct, framing)
			}
		}
	})

	t.Run("stored values cannot corrupt an answer", func(t *testing.T) {
		schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
			{Name: "metadata", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
		body := ipcBody(t, schema, []string{"inj"}, []string{"t"}, []string{`{"a":1},"injected":{"b":2}`})
		status, _ := h.do("POST", "/api/v1/rollouts/a/records", "application/vnd.apache.arrow.stream", body)
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = h.do("GET", "/api/v1/rollouts/a/records/inj", "", nil)
		require.Equal(t, http.StatusOK, status) // {"record": null}
	})

	t.Run("browsers on other sites and unknown content are refused", func(t *testing.T) {
		status, code := h.do("POST", "/api/v1/rollouts", "text/plain", []byte(`{"name": "csrf"}`))
		require.Equal(t, http.StatusUnsupportedMediaType, status)
		require.Equal(t, "UNSUPPORTED_MEDIA_TYPE", code)
		status, _ = h.do("POST", "/api/v1/rollouts", "application/json", []byte(`{"name": "csrf"}`), "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
		require.Equal(t, http.StatusForbidden, status)
	})

	t.Run("open answers never show the deployment", func(t *testing.T) {
		resp, err := http.Get(h.base + "/api/v1/health")
		require.NoError(t, err)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NotContains(t, string(data), "postgres")
		req, _ := http.NewRequest("GET", h.base+"/api/v1/admin/debug/pprof/cmdline", nil)
		req.Header.Set("Authorization", "Bearer admin-token")
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		data, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotContains(t, string(data), "token")
	})

	status, _ = h.do("GET", "/api/v1/health", "", nil)
	require.Equal(t, http.StatusOK, status, "the server is healthy after all of it")
}

func urlQuery(s string) string {
	r := strings.NewReplacer("%", "%25", " ", "%20", "'", "%27", "&", "%26", "+", "%2B", "#", "%23")
	return r.Replace(s)
}

// rawStatus sends head and body on a new connection, never finishing the body, and returns the
// status the server answers (0: none within 10 s).
func rawStatus(t *testing.T, addr, head, body string) int {
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "%s\r\n\r\n%s", head, body)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// ipcBody is an Arrow IPC stream of string columns named as schema.
func ipcBody(t *testing.T, schema *arrow.Schema, cols ...[]string) []byte {
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.AppendValues(c, nil)
		arrs[i] = b.NewArray()
		b.Release()
		defer arrs[i].Release()
	}
	rec := array.NewRecordBatch(schema, arrs, int64(len(cols[0])))
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithZstd())
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// compressedBomb is a small ZSTD-compressed Arrow body of 64 MiB of text.
func compressedBomb(t *testing.T) []byte {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String}}, nil)
	ids, runs := make([]string, 64), make([]string, 64)
	for i := range ids {
		ids[i], runs[i] = fmt.Sprintf("b%d", i), strings.Repeat("a", 1<<20)
	}
	body := ipcBody(t, schema, ids, runs)
	require.Less(t, len(body), 1<<20)
	return body
}
