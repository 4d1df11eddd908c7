package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/quota"
)

// withQuotas gives a worker a quota gate over the cluster's catalog that re-reads every refresh.
func withQuotas(c *cluster, instance string, refresh time.Duration) func(*api.Deps) {
	return func(d *api.Deps) {
		d.Quotas = quota.New(c.cat, quota.Options{Instance: instance, Refresh: refresh, Registerer: d.Registry, Log: d.Log})
	}
}

// Appends past a tenant's quota are refused with 429 QUOTA_EXCEEDED, Retry-After and the quota
// named, on every append route, and write nothing; other tenants are not affected.
func TestAppendsPastATenantQuotaAre429(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", withQuotas(c, "w1", time.Millisecond))
	for _, name := range []string{"team-a.r", "team-b.r"} {
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": name}, nil))
	}
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "team-a.g", "schema": {"columns": [["id", "string"]]}}`, nil))
	var q api.TenantQuota
	require.Equal(t, http.StatusOK, w.do(t, "PUT", "/api/v1/admin/tenants/team-a/quota", map[string]any{"max_rows": 3}, &q))
	require.Equal(t, int64(3), q.MaxRows)
	require.Equal(t, 1, q.Weight)

	records := func(ids ...string) map[string]any {
		var rs []any
		for _, id := range ids {
			rs = append(rs, rollout(id, "t"))
		}
		return map[string]any{"records": rs}
	}
	// Sealed rows count from the catalog's stats (a flush reports them at once; otherwise the
	// flush sweeper does), rows still in a memtable only on the worker that admitted them.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/team-a.r/records?flush=true", records("1", "2"), nil))
	// Over: the whole request is refused (no row of it written).
	req := httptest.NewRequest("POST", "/api/v1/rollouts/team-a.r/records", strings.NewReader(`{"records":[{"id":"3","rollout_id":"t"},{"id":"4","rollout_id":"t"}]}`))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusTooManyRequests, rec.Code, rec.Body.String())
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), `"code":"QUOTA_EXCEEDED"`)
	require.Contains(t, rec.Body.String(), `"quota":"rows"`)
	require.Contains(t, rec.Body.String(), `"tenant":"team-a"`)
	var list struct {
		Records []map[string]any `json:"records"`
	}
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/team-a.r/records", nil, &list))
	require.Len(t, list.Records, 2)
	// Every append route of the tenant's stores counts: the generic store and the Arrow route.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/team-a.g/rows?flush=true", map[string]any{"rows": []any{map[string]any{"id": "g1"}}}, nil))
	status, code := errCode(t, w, "POST", "/api/v1/generic/team-a.g/rows", map[string]any{"rows": []any{map[string]any{"id": "g2"}}})
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, api.CodeQuotaExceeded, code)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String}}, nil)
	body := arrowBody(t, c.mem, schema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.StringBuilder).Append("5")
		b.Field(1).(*array.StringBuilder).Append("t")
	})
	req = httptest.NewRequest("POST", "/api/v1/rollouts/team-a.r/records", strings.NewReader(string(body)))
	req.Header.Set(echo.HeaderContentType, api.MIMEArrowStream)
	rec = httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusTooManyRequests, rec.Code, rec.Body.String())
	// Another tenant appends freely.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/team-b.r/records", records("1", "2", "3", "4"), nil))
	require.Equal(t, 3.0, rejections(t, w, "team-a", "rows"), "the JSON, generic and Arrow refusals")

	// Raised, then removed: appends go through again.
	require.Equal(t, http.StatusOK, w.do(t, "PUT", "/api/v1/admin/tenants/team-a/quota", map[string]any{"max_rows": 100}, nil))
	time.Sleep(5 * time.Millisecond)
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/team-a.r/records", records("3", "4"), nil))
	require.Equal(t, http.StatusNoContent, w.do(t, "DELETE", "/api/v1/admin/tenants/team-a/quota", nil, nil))
	status, code = errCode(t, w, "DELETE", "/api/v1/admin/tenants/team-a/quota", nil)
	require.Equal(t, http.StatusNotFound, status, code)
}

// rejections reads strata_tenant_quota_rejections_total{tenant, quota} of w.
func rejections(t *testing.T, w *worker, tenant, q string) float64 {
	t.Helper()
	mfs, err := w.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "strata_tenant_quota_rejections_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["tenant"] == tenant && labels["quota"] == q {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A rate quota answers 429 with the quota named; the Go-visible Retry-After is at least a second.
func TestAppendRateQuota(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", withQuotas(c, "w1", time.Hour))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "fast.r"}, nil))
	_, err := c.cat.SetTenantQuota(t.Context(), catalog.TenantQuota{Tenant: "fast", MaxAppendRowsPerSecond: 2})
	require.NoError(t, err)
	refused := 0
	for i := range 10 {
		var env api.ErrorBody
		switch w.do(t, "POST", "/api/v1/rollouts/fast.r/records", map[string]any{"records": []any{rollout(fmt.Sprint(i), "t")}}, &env) {
		case http.StatusCreated:
		case http.StatusTooManyRequests:
			require.Equal(t, "append_rows_per_second", env.Error.Quota)
			refused++
		default:
			t.Fatalf("unexpected answer %+v", env)
		}
	}
	require.GreaterOrEqual(t, refused, 7, "2 rows/s: at most a second's allowance plus one batch within the test")
}

// The tenant listing groups stores by tenant with their quotas; hostile tenant names and
// quota bodies are refused with 400 before anything is written; the routes take the admin token.
func TestTenantAdminRoutes(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.AdminToken = "admin" })
	admin := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		}
		req.Header.Set("Authorization", "Bearer admin")
		rec := httptest.NewRecorder()
		w.e.ServeHTTP(rec, req)
		return rec
	}
	for _, n := range []string{"a.1", "a.2", "b.1"} {
		require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": n}, nil))
	}
	require.Equal(t, http.StatusOK, admin("PUT", "/api/v1/admin/tenants/a/quota", `{"max_pending_generations": 5, "weight": 3}`).Code)
	rec := admin("GET", "/api/v1/admin/tenants", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `"tenant":"a","stores":2`)
	require.Contains(t, rec.Body.String(), `"weight":3`)
	require.Contains(t, rec.Body.String(), `"tenant":"b","stores":1`)
	rec = admin("GET", "/api/v1/admin/tenants/quotas", "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"max_pending_generations":5`)

	for _, bad := range []struct{ path, body string }{
		{"/api/v1/admin/tenants/..%2Fx/quota", `{}`},
		{"/api/v1/admin/tenants/" + strings.Repeat("x", 129) + "/quota", `{}`},
		{"/api/v1/admin/tenants/a/quota", `{"max_rows": -1}`},
		{"/api/v1/admin/tenants/a/quota", `{"weight": 5000}`},
		{"/api/v1/admin/tenants/a/quota", `{"max_rows": "many"}`},
		{"/api/v1/admin/tenants/a/quota", `{"max_rowz": 1}`},
		{"/api/v1/admin/tenants/a/quota", `{"max_append_rows_per_second": 1e400}`},
		{"/api/v1/admin/tenants/a/quota", `[]`},
	} {
		rec := admin("PUT", bad.path, bad.body)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s %s: %s", bad.path, bad.body, rec.Body.String())
	}
	require.Equal(t, http.StatusBadRequest, admin("GET", "/api/v1/admin/tenants?limit=0", "").Code)
	rec = admin("GET", "/api/v1/admin/tenants/quotas", "")
	require.Contains(t, rec.Body.String(), `"weight":3`, "rejected requests changed nothing")
	status, _ := errCode(t, w, "GET", "/api/v1/admin/tenants", nil)
	require.Equal(t, http.StatusUnauthorized, status)
}
