package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
)

type fakePinger struct{ err error }

func (f fakePinger) Ping(context.Context) error { return f.err }

func newServer(t *testing.T, ping error) (http.Handler, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	e := api.New(api.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Catalog: fakePinger{ping}, Registry: reg, Version: "test"})
	return e, reg
}

func do(h http.Handler, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestHealthReportsTheCatalog(t *testing.T) {
	h, _ := newServer(t, nil)
	rec := do(h, http.MethodGet, "/api/v1/health")
	require.Equal(t, http.StatusOK, rec.Code)
	var body api.HealthResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, api.HealthResponse{Status: "ok", Version: "test", Catalog: "ok"}, body)

	h, _ = newServer(t, errors.New("connection refused"))
	rec = do(h, http.MethodGet, "/api/v1/health")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, "degraded", body.Status)
}

func TestUnknownRoutesGetTheErrorEnvelope(t *testing.T) {
	h, _ := newServer(t, nil)
	rec := do(h, http.MethodGet, "/api/v1/no/such/thing")
	require.Equal(t, http.StatusNotFound, rec.Code)
	var body api.ErrorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, api.CodeNotFound, body.Error.Code)
	require.NotEmpty(t, body.Error.Message)

	rec = do(h, http.MethodPost, "/api/v1/health")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, api.CodeMethodNotAllow, body.Error.Code)
}

func TestMetricsUseRouteTemplatesAndPassPromlint(t *testing.T) {
	h, reg := newServer(t, nil)
	do(h, http.MethodGet, "/api/v1/health")
	do(h, http.MethodGet, "/api/v1/rollouts/some-store-name/records/abc")
	rec := do(h, http.MethodGet, "/metrics")
	require.Equal(t, http.StatusOK, rec.Code)
	text := rec.Body.String()
	require.Contains(t, text, `strata_http_requests_total{code="200",method="GET",route="/api/v1/health"} 1`)
	require.Contains(t, text, `route="unmatched"`)
	require.NotContains(t, text, "some-store-name", "raw paths never become labels")

	problems, err := promlint.NewWithMetricFamilies(mustGather(t, reg)).Lint()
	require.NoError(t, err)
	require.Empty(t, problems, "%v", problems)
	require.True(t, strings.HasPrefix(text, "#"))
}

func mustGather(t *testing.T, reg *prometheus.Registry) []*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	return mfs
}

// Temporal is reported by health but never makes a data worker unhealthy: appends and reads do
// not need it.
func TestHealthReportsTemporalWithoutFailingOnIt(t *testing.T) {
	e := api.New(api.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Catalog: fakePinger{},
		Registry: prometheus.NewRegistry(), Version: "test", Temporal: fakePinger{fmt.Errorf("dial tcp 10.1.2.3:7233: %w", syscall.ECONNREFUSED)}})
	rec := do(e, http.MethodGet, "/api/v1/health")
	require.Equal(t, http.StatusOK, rec.Code)
	var body api.HealthResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, "ok", body.Status)
	require.Equal(t, "failing: connection refused", body.Temporal, "the kind of fault, never the host")
}

// Health is open: it names kinds of faults, never the hosts, users or paths their errors carry.
func TestHealthNamesFaultKindsNeverHostsOrUsers(t *testing.T) {
	secretErr := errors.New(`failed to connect to host=db.internal user=strata database=strata: password authentication failed`)
	h, _ := newServer(t, secretErr)
	rec := do(h, http.MethodGet, "/api/v1/health")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	for _, leak := range []string{"db.internal", "user=", "strata:", "password"} {
		require.NotContains(t, rec.Body.String(), leak)
	}
	rec = httptest.NewRecorder()
	api.Starting("test").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/health", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), "starting")
}
