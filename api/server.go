// Server construction: middleware order, routes, and the /metrics endpoint.
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/labstack/gommon/bytes"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/quota"
	"github.com/strata-store/strata/routing"
	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storecache"
)

// Pinger reports whether a dependency answers (the catalog, for health).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are what the HTTP layer needs from the rest of the process.
type Deps struct {
	Log       *slog.Logger
	Catalog   Pinger
	Stores    *storecache.Manager  // nil serves only health, metrics and the OpenAPI document
	Registry  *prometheus.Registry // metrics are registered here and served from it
	Version   string
	Allocator memory.Allocator // Arrow memory for request batches (default memory.DefaultAllocator)
	APIToken  string           // when set, data routes need "Authorization: Bearer <token>"
	// AdminToken, when set, is required by the admin routes (/api/v1/admin/...).
	AdminToken string
	// CallerStorageOptions lets a request with the API token create a store with storage_options
	// (a storage location and a prefix); otherwise that takes the admin token.
	CallerStorageOptions bool
	// AllowedHosts, when set, are the only Host header values (without port) answered; others
	// get 403 (a defence against DNS rebinding).
	AllowedHosts []string
	// Maintenance reaches the stores' maintenance workflows (nil: admin maintenance answers 503
	// and the compact route compacts in the handler).
	Maintenance Maintainer
	// Temporal, when set, is pinged by health (reported, but a data worker stays healthy without
	// Temporal: only maintenance needs it).
	Temporal  Pinger
	BodyLimit string // largest request body, e.g. "1G" (default)
	// BodyIdleTimeout answers 408 when a request body stalls this long (default 120s).
	BodyIdleTimeout time.Duration
	// MaxInflightBlobBytes bounds blob bytes being uploaded or downloaded at once (0 = unlimited).
	MaxInflightBlobBytes int64
	// Pprof serves the runtime profiles (net/http/pprof) under /api/v1/admin/debug/pprof/, behind
	// the admin routes' token.
	Pprof bool
	// MaxInflightRequestBytes bounds the memory of request bodies being read and decoded at once
	// (twice each body; 0 = unlimited).
	MaxInflightRequestBytes int64
	// Routing is this worker's view of the live workers: GET …/{name}/route and the
	// Strata-Preferred-Workers header of append answers (nil: the route answers no workers).
	Routing *routing.Membership
	// Quotas admits appends against their tenants' quotas (nil: no quotas are enforced).
	Quotas *quota.Gate
	// Tenancy maps store names to tenants for the admin tenant routes (default
	// catalog.DefaultTenancy; the Quotas gate's own when it is set).
	Tenancy catalog.Tenancy
	// SQL runs the query route's statements (package sqlquery/duckrun in the strata binary); nil
	// answers 503.
	SQL sqlquery.Runner
	// QueryMaxRows and QueryMaxJSONBytes bound a JSON query answer (defaults 10,000 rows and
	// 64 MiB; more set "truncated"); QueryMaxStreamRows an Arrow, CSV or Parquet one (1,000,000).
	QueryMaxRows       int
	QueryMaxJSONBytes  int64
	QueryMaxStreamRows int
	// FeedPollInterval: how often a long-polling change-feed read looks for newly sealed rows
	// when no seal notification wakes it first (default 250ms; Stores.RunSealWatch delivers
	// other workers' notifications).
	FeedPollInterval time.Duration
	// Leases holds read tokens' versions with a SnapshotLease workflow each (nil: tokens still
	// hold through the catalog until they expire, without a workflow to show them).
	Leases Leaser
	// MaxSnapshotTTL bounds a read token's lifetime (default 7 days).
	MaxSnapshotTTL time.Duration
	// Memory, when set, is told what the request-memory and blob budgets hold at any moment
	// (the process's memory governor sizes the soft memory limit from it).
	Memory MemoryTracker
}

// MemoryTracker accounts for memory a budget holds.
type MemoryTracker interface{ Track(source func() int64) }

// New builds the Echo instance with every route registered.
func New(d Deps) *echo.Echo {
	if d.Allocator == nil {
		d.Allocator = memory.DefaultAllocator
	}
	if d.BodyLimit == "" {
		d.BodyLimit = "1G"
	}
	if d.BodyIdleTimeout == 0 {
		d.BodyIdleTimeout = 120 * time.Second
	}
	if d.FeedPollInterval <= 0 {
		d.FeedPollInterval = 250 * time.Millisecond
	}
	if d.MaxSnapshotTTL <= 0 {
		d.MaxSnapshotTTL = 7 * 24 * time.Hour
	}
	if d.Quotas != nil {
		d.Tenancy = d.Quotas.Tenancy()
	} else if d.Tenancy.Separator == "" {
		d.Tenancy = catalog.DefaultTenancy
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = ErrorHandler(d.Log)
	metrics := newHTTPMetrics(d.Registry)
	bodyTimeouts := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_http_request_body_timeouts_total", Help: "Requests answered 408 because their body stalled."})
	blobRejections := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_blob_budget_rejections_total", Help: "Blob uploads and downloads refused with 503 by the in-flight blob budget."})
	requestRejections := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_request_memory_rejections_total", Help: "Requests refused with 503 by the in-flight request-memory budget."})
	d.Registry.MustRegister(bodyTimeouts, blobRejections, requestRejections)
	// Order: recover and count everything; every request's body gets the idle timeout before
	// anything else may read (or leave unread) a byte of it, so no route — unauthenticated,
	// admin, health — can be held open by a body that never completes.
	e.Use(middleware.Recover())
	e.Use(metrics.middleware)
	e.Use(bodyIdleTimeout(d.BodyIdleTimeout, bodyTimeouts))
	e.Use(allowedHostsGuard(d.AllowedHosts), crossOriginGuard())

	limit, err := bytes.Parse(d.BodyLimit)
	if err != nil || limit <= 0 {
		limit = 1 << 30
	}
	h := &handlers{deps: d, mem: d.Allocator, bodyLimit: limit,
		blobs:      &byteBudget{what: "blob bytes", capacity: d.MaxInflightBlobBytes, rejected: blobRejections},
		openAPIDoc: sync.OnceValue(func() map[string]any { return buildOpenAPI(d.Version) }),
		feed:       newFeedMetrics(d.Registry)}
	requests := &byteBudget{what: "request bytes", capacity: d.MaxInflightRequestBytes, rejected: requestRejections}
	h.requests = requests
	if d.Memory != nil {
		d.Memory.Track(func() int64 { return requests.held() + h.blobs.held() })
	}
	open := newRouteGroup(e, "", middleware.BodyLimit("1M"))
	open.GET("/api/v1/health", h.health)
	open.GET("/api/v1/openapi.json", h.openAPI)
	open.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{})))
	if d.Stores != nil {
		data := newRouteGroup(e, "/api/v1", bearerAuth(d.APIToken, d.AdminToken), middleware.BodyLimit(d.BodyLimit), requestMemory(requests))
		h.registerStores(data)
		h.registerSnapshots(data)
		admin := newRouteGroup(e, "/api/v1/admin", bearerAuth(adminToken(d)), middleware.BodyLimit("1M"))
		h.registerAdmin(admin)
		if d.Pprof {
			registerPprof(admin)
		}
	}
	return e
}

// adminToken is the token the admin routes require: the admin token, or the API token when only
// that is set (a deployment that protects its data never leaves maintenance open by omission).
func adminToken(d Deps) string {
	if d.AdminToken != "" {
		return d.AdminToken
	}
	return d.APIToken
}

// bearerAuth requires "Authorization: Bearer <token>" when token is set; also (a non-empty one)
// is accepted too: the admin token opens the data routes as well.
func bearerAuth(token string, also ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if token == "" {
				return next(c)
			}
			accepted := bears(c, token)
			for _, t := range also {
				accepted = accepted || (t != "" && bears(c, t))
			}
			if !accepted {
				return &APIError{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: "missing or wrong bearer token"}
			}
			return next(c)
		}
	}
}

// mayChooseStorage answers 403 unless the request may create a store with storage options: with
// the admin token (or the API token when the operator allows it, or when no admin token is set).
func (h *handlers) mayChooseStorage(c echo.Context) error {
	token := adminToken(h.deps)
	if token == "" || h.deps.CallerStorageOptions {
		return nil
	}
	if !bears(c, token) {
		return &APIError{Status: http.StatusForbidden, Code: CodeForbidden,
			Message: "storage_options choose where a store lives: that takes the admin token (or a server started with --caller-storage-options)"}
	}
	return nil
}

// bears reports whether the request carries "Authorization: Bearer <token>" (compared in
// constant time).
func bears(c echo.Context, token string) bool {
	got, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

type handlers struct {
	deps       Deps
	mem        memory.Allocator
	bodyLimit  int64 // bytes: the largest body, and the most an Arrow body may decode to
	blobs      *byteBudget
	requests   *byteBudget           // request memory: bodies as they arrive, and what decoding them allocates
	openAPIDoc func() map[string]any // the OpenAPI document, built on first use
	feed       *feedMetrics
}

// HealthResponse is the body of GET /api/v1/health: "ok", or the failure, per dependency.
type HealthResponse struct {
	Status  string `json:"status"` // "ok" or "degraded"
	Version string `json:"version"`
	Catalog string `json:"catalog"`
	// Storage: the data directory answered a write, read and delete (omitted by workers that
	// serve no data).
	Storage string `json:"storage,omitempty"`
	// Temporal: the maintenance orchestrator answered (omitted when not configured). Reported
	// only: appends and reads do not need it, so it never makes the worker unhealthy.
	Temporal string `json:"temporal,omitempty"`
	// FencedStores: stores this worker can no longer append to because another process with its
	// instance id claimed their write shards. Any makes the worker unhealthy.
	FencedStores int `json:"fenced_stores"`
}

// health answers 200 when the catalog and the storage answer within two seconds and no store is
// fenced, 503 otherwise; each dependency is probed concurrently.
func (h *handlers) health(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	resp := HealthResponse{Status: "ok", Version: h.deps.Version}
	// Health is open to anyone: a failure is named by its kind, never by the hosts, users or
	// paths its error carries (those are logged).
	probe := func(what string, p func(context.Context) error) <-chan string {
		out := make(chan string, 1)
		go func() {
			if err := p(ctx); err != nil {
				if h.deps.Log != nil {
					h.deps.Log.Warn("health probe failed", "dependency", what, "err", err)
				}
				out <- "failing: " + faultKind(err)
				return
			}
			out <- "ok"
		}()
		return out
	}
	catalogDone := probe("catalog", h.deps.Catalog.Ping)
	var storageDone, temporalDone <-chan string
	if h.deps.Stores != nil {
		storageDone = probe("storage", h.deps.Stores.ProbeStorage)
		resp.FencedStores = h.deps.Stores.FencedStores()
	}
	if h.deps.Temporal != nil {
		temporalDone = probe("temporal", h.deps.Temporal.Ping)
	}
	resp.Catalog = <-catalogDone
	if storageDone != nil {
		resp.Storage = <-storageDone
	}
	if temporalDone != nil {
		resp.Temporal = <-temporalDone
	}
	status := http.StatusOK
	if resp.Catalog != "ok" || (storageDone != nil && resp.Storage != "ok") || resp.FencedStores > 0 {
		resp.Status, status = "degraded", http.StatusServiceUnavailable
	}
	return c.JSON(status, resp)
}

// registerPprof serves net/http/pprof's handlers under the admin group's debug/pprof/.
func registerPprof(admin *routeGroup) {
	admin.GET("/debug/pprof/", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
	admin.GET("/debug/pprof/cmdline", func(c echo.Context) error { // flag names only: values may be secrets
		return c.String(http.StatusOK, strings.Join(redactedArgs(os.Args), "\x00"))
	})
	admin.GET("/debug/pprof/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	admin.GET("/debug/pprof/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	admin.GET("/debug/pprof/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	admin.GET("/debug/pprof/:profile", func(c echo.Context) error {
		pprof.Handler(c.Param("profile")).ServeHTTP(c.Response(), c.Request())
		return nil
	})
}

// redactedArgs is a command line with every value elided: flags keep their names ("--api-token"),
// values (tokens, database URLs with passwords) become "…".
func redactedArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case i == 0:
			out[i] = a
		case strings.HasPrefix(a, "-"):
			name, _, hasValue := strings.Cut(a, "=")
			out[i] = name
			if hasValue {
				out[i] += "=…"
			}
		default:
			out[i] = "…"
		}
	}
	return out
}

// PingFunc adapts a function to Pinger.
type PingFunc func(ctx context.Context) error

// Ping calls f.
func (f PingFunc) Ping(ctx context.Context) error { return f(ctx) }

// faultKind names what kind of failure err is, in words that carry nothing of the deployment.
func faultKind(err error) string {
	switch {
	case objstore.Fault(err) != "":
		return objstore.Fault(err)
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within the probe's timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case catalog.IsUnavailable(err):
		return "unreachable"
	}
	return "error"
}

// Starting is what a worker serves while it cannot yet open the catalog (PostgreSQL down at
// start): health answers 503 "degraded" (the reason is in the worker's log, never in the open
// answer), every other route 503 UNAVAILABLE with Retry-After. The worker replaces it with New's
// handler as soon as the catalog opens.
func Starting(version string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
		if r.URL.Path == "/api/v1/health" {
			_ = json.NewEncoder(w).Encode(HealthResponse{Status: "degraded", Version: version, Catalog: "starting: not reachable yet"})
			return
		}
		_ = json.NewEncoder(w).Encode(ErrorBody{Error: ErrorDetail{Code: CodeUnavailable,
			Message: "the worker is starting: the catalog (PostgreSQL) is not reachable yet; retry"}})
	})
}
