package webui_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/datagen"
	"github.com/strata-store/strata/internal/fakemaint"
	"github.com/strata-store/strata/internal/fakesql"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/webui"
	"github.com/strata-store/strata/workflows"
)

// server is an API with the UI on it, over a real catalog and a data directory.
func server(t *testing.T, apiToken, adminToken string) *echo.Echo {
	e, _, _ := serverWith(t, apiToken, adminToken)
	return e
}

// serverWith is server that also returns its catalog and its maintenance test double.
func serverWith(t *testing.T, apiToken, adminToken string) (*echo.Echo, *catalog.Catalog, *fakemaint.Maintainer) {
	t.Helper()
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr, err := storecache.New(cat, storecache.Config{DataURL: t.TempDir(), Capacity: 4, Store: lsm.Options{
		Instance: "w", Allocator: mem, Clock: hlc.New(nil), Budget: budget.New(1<<30, reg),
		Metrics: lsm.NewMetrics(reg), Table: table.Options{Metrics: table.NewMetrics(reg), Allocator: mem},
	}}, reg, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	d := api.Deps{Log: log, Catalog: cat, Stores: mgr, Registry: reg, Version: "test", Allocator: mem, APIToken: apiToken, AdminToken: adminToken}
	d.SQL = &fakesql.Runner{} // the real runner is tested in sqlquery/duckrun and cmd/strata
	maint := &fakemaint.Maintainer{}
	d.Maintenance = maint
	e := api.New(d)
	require.NoError(t, webui.Register(e, webui.Options{API: e, APIToken: apiToken, AdminToken: adminToken, TemporalUIURL: "http://temporal.test:8233", Log: log}))
	return e, cat, maint
}

// browser sends requests as a page of the UI would: its cookies, htmx's header on POSTs.
type browser struct {
	t      *testing.T
	e      *echo.Echo
	cookie *http.Cookie
	token  string // sent as a bearer token to the API routes (setup)
}

func (b *browser) do(method, target string, form url.Values, headers ...string) *httptest.ResponseRecorder {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, target, body)
	req.Host = "strata.test"
	if form != nil {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationForm)
	}
	if method == http.MethodPost && strings.HasPrefix(target, "/ui/") {
		req.Header.Set("HX-Request", "true")
		req.Header.Set("Origin", "http://strata.test")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == "strata_ui" {
			b.cookie = c
		}
	}
	return rec
}

func (b *browser) api(method, target, body string) int {
	b.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	if b.token != "" {
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+b.token)
	}
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, req)
	return rec.Code
}

// Signing in: the pages take a signed session cookie, which never holds the token; a forged,
// altered or expired one is refused; the API token reads, the admin token also maintains.
func TestSignInAndSessions(t *testing.T) {
	e := server(t, "data-secret", "admin-secret")
	b := &browser{t: t, e: e, token: "admin-secret"}
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts", `{"name": "exp-1"}`))

	rec := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.True(t, strings.HasPrefix(rec.Header().Get("Location"), "/ui/login"))
	rec = b.do("POST", "/ui/login", url.Values{"token": {"wrong"}})
	require.Contains(t, rec.Body.String(), "not one this server takes")
	require.Nil(t, b.cookie)

	rec = b.do("POST", "/ui/login", url.Values{"token": {"data-secret"}, "next": {"https://evil.example/"}})
	require.Equal(t, "/ui/", rec.Header().Get("HX-Redirect"), "never sent to another site")
	require.NotNil(t, b.cookie)
	require.NotContains(t, b.cookie.Value, "data-secret")
	require.True(t, b.cookie.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, b.cookie.SameSite)
	rec = b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), "rollout/exp-1")
	require.Contains(t, rec.Body.String(), "Sign in with the admin token", "the data role sees no maintenance state")
	rec = b.do("POST", "/ui/s/rollout/exp-1/do/merge_wal", nil)
	require.Contains(t, rec.Body.String(), "takes the admin token")

	// A session of the data role altered to claim admin, a made-up one, and an expired one.
	parts := strings.Split(b.cookie.Value, ".")
	for _, v := range []string{"admin." + parts[1] + "." + parts[2], "admin.99999999999.00", "data.1." + parts[2]} {
		bad := &browser{t: t, e: e, cookie: &http.Cookie{Name: "strata_ui", Value: v}}
		require.Equal(t, http.StatusSeeOther, bad.do("GET", "/ui/", nil).Code, v)
	}

	admin := &browser{t: t, e: e}
	admin.do("POST", "/ui/login", url.Values{"token": {"admin-secret"}})
	rec = admin.do("GET", "/ui/s/rollout/exp-1", nil)
	require.Contains(t, rec.Body.String(), "Merge WAL now")
	require.Contains(t, rec.Body.String(), "http://temporal.test:8233/namespaces/default/workflows/store%2Frollout%2Fexp-1")
	rec = admin.do("POST", "/ui/logout", nil)
	require.Equal(t, "/ui/login", rec.Header().Get("HX-Redirect"))
}

// What changes something is a POST a page of another site cannot send: without htmx's header or
// from another origin it is refused; the pages forbid framing and foreign scripts.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	e := server(t, "", "")
	b := &browser{t: t, e: e}
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts", `{"name": "exp-1"}`))
	for _, h := range [][]string{{"HX-Request", ""}, {"Origin", "http://evil.example"}, {"Sec-Fetch-Site", "cross-site"}} {
		rec := b.do("POST", "/ui/s/rollout/exp-1/do/flush", nil, h...)
		require.Equal(t, http.StatusForbidden, rec.Code, "%v", h)
	}
	require.Contains(t, b.do("POST", "/ui/s/rollout/exp-1/do/flush", nil).Body.String(), "Flushed")
	rec := b.do("GET", "/ui/s/rollout/exp-1", nil)
	require.Contains(t, rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.Equal(t, http.StatusNotFound, b.do("GET", "/ui/s/nokind/x", nil).Code)
	require.Equal(t, http.StatusNotFound, b.do("GET", "/ui/s/rollout/..%2f..%2fetc", nil).Code)
}

// The pages show what the API answers: stores found by prefix, a store's state, the record
// browser's sources and filter with keyset pages, one record, a blob, a datagen item, and the
// SQL console with its downloads.
func TestPagesShowTheStores(t *testing.T) {
	e := server(t, "", "")
	b := &browser{t: t, e: e}
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts", `{"name": "exp-1"}`))
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts", `{"name": "other"}`))
	var recs []string
	for i := range 60 {
		recs = append(recs, `{"id": "r`+string(rune('a'+i/26))+string(rune('a'+i%26))+`", "rollout_id": "t`+string(rune('0'+i%2))+`", "content": "`+strings.Repeat("long text ", 20)+`"}`)
	}
	recs = append(recs, `{"id": "zz-blob", "rollout_id": "t9", "role": "artifact", "binary_payload": "AAEC"}`)
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts/exp-1/records?flush=true", `{"records": [`+strings.Join(recs, ",")+`]}`))

	page := b.do("GET", "/ui/?prefix=exp", nil).Body.String()
	require.Contains(t, page, "rollout/exp-1")
	require.NotContains(t, page, "rollout/other")

	page = b.do("GET", "/ui/s/rollout/exp-1/records", nil).Body.String()
	require.Equal(t, 50, strings.Count(page, `class="open"`))
	require.Contains(t, page, "<details><summary>long text", "a wide value is folded")
	require.Contains(t, page, `id="next-page"`)
	page = b.do("GET", "/ui/s/rollout/exp-1/records?filter="+url.QueryEscape("rollout_id = 't9'"), nil).Body.String()
	require.Equal(t, 1, strings.Count(page, `class="open"`))
	page = b.do("GET", "/ui/s/rollout/exp-1/records?source=base", nil).Body.String()
	require.Contains(t, page, "no rows", "nothing is merged yet")
	page = b.do("GET", "/ui/s/rollout/exp-1/records?filter="+url.QueryEscape("nope >"), nil).Body.String()
	require.Contains(t, page, `class="error"`)

	page = b.do("GET", "/ui/s/rollout/exp-1/record?id=zz-blob", nil).Body.String()
	require.Contains(t, page, "&#34;rollout_id&#34;: &#34;t9&#34;")
	rec := b.do("GET", "/ui/s/rollout/exp-1/blob?id=zz-blob", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, []byte{0, 1, 2}, rec.Body.Bytes())
	require.Contains(t, rec.Header().Get(echo.HeaderContentDisposition), "attachment")

	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/generic", `{"name": "g", "schema": {"columns": [["id", "string"], ["blob", "binary"]]}}`))
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/generic/g/rows?flush=true", `{"rows": [{"id": "x", "blob": "aGk="}]}`))
	require.Contains(t, b.do("GET", "/ui/s/generic/g/record?id=x", nil).Body.String(), "/ui/s/generic/g/blob?column=blob")
	require.Equal(t, "hi", b.do("GET", "/ui/s/generic/g/blob?id=x&column=blob", nil).Body.String())

	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/datagen", `{"name": "dg"}`))
	page = b.do("GET", "/ui/s/datagen/dg/item?item_id=absent", nil).Body.String()
	require.Contains(t, page, `id="missing"`)
	ev := func(seq int, cp, typ, extra string) string {
		return `{"event_id": "` + datagen.EventID("5", cp, 0) + `", "item_id": "5", "root_item_id": "5", "item_seq": ` + string(rune('0'+seq)) +
			`, "checkpoint_id": "` + cp + `", "event_type": "` + typ + `", "attempt": 0, "run_id": "run-1", "writer_epoch": "w-1", "schema_version": 2` + extra + `}`
	}
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/datagen/dg/events", `{"events": [`+ev(0, "created", "ITEM_CREATED", `, "status": "running"`)+`,`+
		ev(1, "main-0", "STEP_STARTED", `, "step_name": "main", "step_kind": "sequence", "step_index": 0`)+`]}`))
	page = b.do("GET", "/ui/s/datagen/dg/item?item_id=5", nil).Body.String()
	require.Contains(t, page, `id="folded"`)
	require.Contains(t, page, "STEP_STARTED", "the event timeline")
	require.Contains(t, b.do("GET", "/ui/s/datagen/dg", nil).Body.String(), "Run overview")

	page = b.do("POST", "/ui/s/rollout/exp-1/sql", url.Values{"sql": {"SELECT id, rollout_id FROM t"}, "source": {"all"}}).Body.String()
	require.Contains(t, page, "<td>zz-blob</td><td>t9</td>")
	require.Contains(t, page, "61 rows")
	require.Contains(t, page, "/ui/s/rollout/exp-1/sql/download?format=csv")
	page = b.do("POST", "/ui/s/rollout/exp-1/sql", url.Values{"sql": {"DROP TABLE t"}}).Body.String()
	require.Contains(t, page, "INVALID_SQL")
	rec = b.do("GET", "/ui/s/rollout/exp-1/sql/download?format=csv&sql="+url.QueryEscape("SELECT id, rollout_id FROM t"), nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, strings.HasPrefix(rec.Body.String(), "id,rollout_id\n"))
	require.Contains(t, rec.Body.String(), "zz-blob,t9\n")
}

// A store's page shows its maintenance history and failing operations from the catalog, and its
// buttons run maintenance through the store's workflow (here the test double of the maintenance
// access), a retry of the failing operation included; a merged store lists its versions.
func TestStorePageMaintenance(t *testing.T) {
	e, cat, maint := serverWith(t, "", "")
	b := &browser{t: t, e: e}
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts", `{"name": "exp-1"}`))
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts", `{"name": "exp-10"}`))
	ctx := context.Background()
	now := time.Now()
	require.NoError(t, cat.RecordRun(ctx, catalog.MaintenanceRun{Kind: catalog.KindRollout, Name: "exp-1", Op: "compact",
		StartedAt: now.Add(-time.Second), FinishedAt: now, Outcome: catalog.RunOK, Detail: `{"fragments_added":1}`}))
	require.NoError(t, cat.RecordFailure(ctx, catalog.MaintenanceFailure{Kind: catalog.KindRollout, Name: "exp-1", Op: "merge_wal",
		ErrorType: "ObjectStoreUnavailable", Message: "disk on fire", Since: now, LastAt: now, Failures: 3}))
	require.NoError(t, cat.RecordFailure(ctx, catalog.MaintenanceFailure{Kind: catalog.KindRollout, Name: "exp-10", Op: "compact",
		ErrorType: "X", Message: "another store's", Since: now, LastAt: now, Failures: 1}))

	page := b.do("GET", "/ui/s/rollout/exp-1", nil).Body.String()
	require.Contains(t, page, `id="history"`)
	require.Contains(t, page, "fragments_added")
	require.Contains(t, page, "disk on fire")
	require.Contains(t, page, "Retry merge_wal")
	require.NotContains(t, page, "another store&#39;s", "only this store's failures")

	var ran []workflows.Request
	maint.RunFunc = func(_ context.Context, s workflows.StoreRef, r workflows.Request) (workflows.ActivityResult, error) {
		require.Equal(t, workflows.StoreRef{Kind: catalog.KindRollout, Name: "exp-1"}, s)
		ran = append(ran, r)
		return workflows.ActivityResult{GenerationsMerged: 2}, nil
	}
	for _, op := range []string{"merge_wal", "compact"} {
		rec := b.do("POST", "/ui/s/rollout/exp-1/do/"+op, nil)
		require.Contains(t, rec.Body.String(), "store/rollout/exp-1", op)
		require.Equal(t, "store-changed", rec.Header().Get("HX-Trigger"))
	}
	require.Equal(t, []workflows.Op{workflows.OpMergeWAL, workflows.OpCompact}, []workflows.Op{ran[0].Op, ran[1].Op})
	require.Equal(t, http.StatusNotFound, b.do("POST", "/ui/s/rollout/exp-1/do/drop_everything", nil).Code)

	// Versions: after a merge (in the handler: the test double queues nothing), the page links the
	// base table's versions, and the browser reads one.
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts/exp-1/records?flush=true", `{"records": [{"id": "a", "rollout_id": "t"}]}`))
	maint.SetAvailable(false)
	require.Equal(t, http.StatusOK, b.api("POST", "/api/v1/internal/merge-wal/exp-1", ""))
	page = b.do("GET", "/ui/s/rollout/exp-1", nil).Body.String()
	require.Contains(t, page, "/ui/s/rollout/exp-1/records?version=1")
	page = b.do("GET", "/ui/s/rollout/exp-1/records?version=1", nil).Body.String()
	require.Contains(t, page, "no rows", "version 1 is the empty table")
}

// The tenants page groups stores by tenant with their quotas and flags a tenant at one; the
// stores page shows each store's write shards.
func TestTenantsPage(t *testing.T) {
	e := server(t, "", "")
	b := &browser{t: t, e: e}
	for _, n := range []string{"team-a.one", "team-a.two", "team-b.one"} {
		require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts", `{"name": "`+n+`"}`))
	}
	require.Equal(t, http.StatusCreated, b.api("POST", "/api/v1/rollouts/team-a.one/records?flush=true", `{"records": [{"id": "1", "rollout_id": "t"}]}`))
	require.Equal(t, http.StatusOK, b.api("PUT", "/api/v1/admin/tenants/team-a/quota", `{"max_pending_generations": 1, "weight": 4}`))
	page := b.do("GET", "/ui/tenants", nil).Body.String()
	require.Contains(t, page, `href="/ui/?prefix=team-a">team-a</a>`)
	require.Contains(t, page, "pending_generations quota reached")
	require.Contains(t, page, `<td>4</td>`, "team-a's weight")
	require.Contains(t, page, `href="/ui/?prefix=team-b">team-b</a>`)
	page = b.do("GET", "/ui/?prefix=team-a.one", nil).Body.String()
	require.Contains(t, page, "<th>Shards</th>")
	require.Regexp(t, `rollout/team-a.one</a></td>\s*<td>1</td>`, page)
}
