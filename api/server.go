// Server construction: middleware order, routes, and the /metrics endpoint.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Pinger reports whether a dependency answers (the catalog, for health).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are what the HTTP layer needs from the rest of the process.
type Deps struct {
	Log      *slog.Logger
	Catalog  Pinger
	Registry *prometheus.Registry // metrics are registered here and served from it
	Version  string
}

// New builds the Echo instance with every route registered.
func New(d Deps) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = ErrorHandler(d.Log)
	metrics := newHTTPMetrics(d.Registry)
	e.Use(middleware.Recover())
	e.Use(metrics.middleware)

	h := &handlers{deps: d}
	e.GET("/api/v1/health", h.health)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{})))
	return e
}

type handlers struct {
	deps Deps
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
