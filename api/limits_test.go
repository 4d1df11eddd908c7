package api

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
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
