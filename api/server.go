// Server construction: middleware order, routes, and the /metrics endpoint.
package api

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/labstack/gommon/bytes"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-store/strata/stores"
)

// Pinger reports whether a dependency answers (the catalog, for health).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are what the HTTP layer needs from the rest of the process.
type Deps struct {
	Log       *slog.Logger
	Catalog   Pinger
	Stores    *stores.Manager      // nil serves only health, metrics and the OpenAPI document
	Registry  *prometheus.Registry // metrics are registered here and served from it
	Version   string
	Allocator memory.Allocator // Arrow memory for request batches (default memory.DefaultAllocator)
	APIToken  string           // when set, data routes need "Authorization: Bearer <token>"
	// AdminToken, when set, is required by the admin routes (/api/v1/admin/...).
	AdminToken string
	// Maintenance queues maintenance requests (nil: admin maintenance answers 503).
	Maintenance MaintenanceRequester
	BodyLimit   string // largest request body, e.g. "1G" (default)
	// BodyIdleTimeout answers 408 when a request body stalls this long (default 120s).
	BodyIdleTimeout time.Duration
	// MaxInflightBlobBytes bounds blob bytes being uploaded or downloaded at once (0 = unlimited).
	MaxInflightBlobBytes int64
	// MaxInflightRequestBytes bounds the memory of request bodies being read and decoded at once
	// (twice each body; 0 = unlimited).
	MaxInflightRequestBytes int64
}

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

	limit, err := bytes.Parse(d.BodyLimit)
	if err != nil || limit <= 0 {
		limit = 1 << 30
	}
	h := &handlers{deps: d, mem: d.Allocator, bodyLimit: limit,
		blobs: &byteBudget{what: "blob bytes", capacity: d.MaxInflightBlobBytes, rejected: blobRejections}}
	requests := &byteBudget{what: "request bytes", capacity: d.MaxInflightRequestBytes, rejected: requestRejections}
	e.GET("/api/v1/health", h.health, middleware.BodyLimit("1M"))
	e.GET("/api/v1/openapi.json", h.openAPI, middleware.BodyLimit("1M"))
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{})), middleware.BodyLimit("1M"))
	if d.Stores != nil {
		data := e.Group("/api/v1", bearerAuth(d.APIToken), middleware.BodyLimit(d.BodyLimit), requestMemory(requests))
		h.registerRollouts(data)
		h.registerGeneric(data)
		h.registerAdmin(e.Group("/api/v1/admin", bearerAuth(adminToken(d)), middleware.BodyLimit("1M")))
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

// bearerAuth requires "Authorization: Bearer <token>" when token is set.
func bearerAuth(token string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if token == "" {
				return next(c)
			}
			got, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				return &APIError{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: "missing or wrong bearer token"}
			}
			return next(c)
		}
	}
}

type handlers struct {
	deps      Deps
	mem       memory.Allocator
	bodyLimit int64 // bytes: the largest body, and the most an Arrow body may decode to
	blobs     *byteBudget
}

// HealthResponse is the body of GET /api/v1/health.
type HealthResponse struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	Catalog string `json:"catalog"`
}

// health answers 200 when the catalog answers within two seconds, 503 otherwise.
func (h *handlers) health(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	resp := HealthResponse{Status: "ok", Version: h.deps.Version, Catalog: "ok"}
	status := http.StatusOK
	if err := h.deps.Catalog.Ping(ctx); err != nil {
		resp.Status, resp.Catalog, status = "degraded", err.Error(), http.StatusServiceUnavailable
	}
	return c.JSON(status, resp)
}
