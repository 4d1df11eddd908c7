package api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestBlobBudgetAdmitsUntilFullThenReleases(t *testing.T) {
	b := &byteBudget{capacity: 10, rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total"})}
	r1, err := b.reserve(6)
	require.NoError(t, err)
	_, err = b.reserve(6)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.Status)
	require.Positive(t, apiErr.RetryAfter)
	require.EqualValues(t, 1, testutil.ToFloat64(b.rejected))
	r1()
	r1() // idempotent
	r2, err := b.reserve(100)
	require.NoError(t, err, "a lone oversized request is admitted")
	_, err = b.reserve(1)
	require.Error(t, err, "it holds the whole budget")
	r2()
	r3, err := b.reserve(-1)
	require.NoError(t, err, "unknown length reserves the whole budget")
	r3()
	unlimited := &byteBudget{}
	r4, err := unlimited.reserve(1 << 40)
	require.NoError(t, err)
	r4()
}

func TestAStalledBodyGets408(t *testing.T) {
	reg := prometheus.NewRegistry()
	timeouts := prometheus.NewCounter(prometheus.CounterOpts{Name: "t_total"})
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))
	e.POST("/x", func(c echo.Context) error {
		var v map[string]any
		if err := decodeBody(c, &v); err != nil {
			return err
		}
		return c.NoContent(http.StatusOK)
	}, bodyIdleTimeout(100*time.Millisecond, timeouts))
	_ = reg
	srv := httptest.NewServer(e)
	defer srv.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(body), CodeTimeout)
	require.EqualValues(t, 1, testutil.ToFloat64(timeouts))
}

func TestReadBodyTrustsNoDeclaredLength(t *testing.T) {
	read := func(body string, declared int64) ([]byte, error) {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.ContentLength = declared
		return readBody(echo.New().NewContext(req, httptest.NewRecorder()))
	}
	got, err := read(`{"records": []}`, 15)
	require.NoError(t, err)
	require.Equal(t, `{"records": []}`, string(got))
	got, err = read(`{"records": []}`, 5)
	require.NoError(t, err)
	require.Equal(t, `{"records": []}`, string(got), "a body longer than declared is read whole")
	_, err = read(`{}`, 50)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr, "a body shorter than declared")
	require.Equal(t, http.StatusBadRequest, apiErr.Status)
	got, err = read(`{"a": 1}`, -1)
	require.NoError(t, err, "unknown length")
	require.Equal(t, `{"a": 1}`, string(got))
}

// TestReadGrowingReadsEveryBodyWhole: bodies of many lengths, declared exactly, short, long or
// not at all, arriving in pieces of random sizes, are read byte for byte (or refused when shorter
// than declared).
func TestReadGrowingReadsEveryBodyWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 51))
	for _, size := range []int{1, 2, 3, 100, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1 << 20, 3<<20 + 17, preallocBodyBytes*2 + 5} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(rng.IntN(256))
		}
		for _, declared := range []int64{int64(size), -1, int64(size) + 1 + int64(size)/3, int64(size) / 2} {
			piece := 1 + rng.IntN(1<<16)
			got, err := readGrowing(&pieces{data: body, max: piece}, declared)
			if declared > int64(size) {
				require.ErrorIs(t, err, io.ErrUnexpectedEOF, "size %d declared %d", size, declared)
				continue
			}
			require.NoError(t, err, "size %d declared %d", size, declared)
			require.True(t, bytes.Equal(body, got), "size %d declared %d", size, declared)
		}
	}
}

// pieces hands out data at most max bytes per Read.
type pieces struct {
	data []byte
	max  int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.max)], p.data)
	p.data = p.data[n:]
	return n, nil
}

// TestReadGrowingCostsOneAndAHalfBodies: a body of known length allocates its chunks up to half
// of it, then one buffer of the whole (no trail of doubling copies).
func TestReadGrowingCostsOneAndAHalfBodies(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 17<<20+12345)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readGrowing(&pieces{data: body, max: 1 << 16}, int64(len(body)))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, got, len(body))
	allocated := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body))
	require.Less(t, allocated, 1.6, "allocated %.2f bodies", allocated)
}

// TestArrivalBufferJoinsPartsAcrossItsSwitch: parts of random sizes read back to back (as a
// multipart body's payloads are), under a declared bound larger than them, come out contiguous
// and whole whichever side of the half-way switch each one fell on.
func TestArrivalBufferJoinsPartsAcrossItsSwitch(t *testing.T) {
	rng := rand.New(rand.NewPCG(52, 1))
	for _, declared := range []int64{-1, 1 << 20, 3 << 20, 40 << 20} {
		a := newArrivalBuffer(declared)
		var want []byte
		for len(want) < 2<<20+333 {
			part := make([]byte, rng.IntN(200<<10))
			for i := range part {
				part[i] = byte(rng.IntN(256))
			}
			start := a.len()
			require.NoError(t, a.readFrom(&pieces{data: part, max: 1 + rng.IntN(70<<10)}))
			require.Equal(t, start+int64(len(part)), a.len())
			want = append(want, part...)
		}
		require.True(t, bytes.Equal(want, a.bytes()), "declared %d", declared)
	}
}

// A body that declares far more than it sends costs what it sent: the buffer never holds more
// than twice what arrived (past the first preallocBodyBytes) before the read ends.
func TestReadGrowingAllocatesWithWhatArrives(t *testing.T) {
	sent := bytes.Repeat([]byte("x"), 20<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readGrowing(io.MultiReader(&pieces{data: sent, max: 1 << 16}, errReader{io.ErrClosedPipe}), 1<<30)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, io.ErrClosedPipe)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.LessOrEqual(t, allocated, uint64(2*len(sent)+1<<20), "allocated %d MiB for %d MiB sent of a declared 1 GiB", allocated>>20, len(sent)>>20)
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
