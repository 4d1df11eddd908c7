// HTTP metrics. Labels use the route template (c.Path()), never the raw path, so the number of
// series does not grow with the number of stores; unmatched requests are labelled "unmatched".
package api

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_http_requests_total",
			Help: "HTTP requests served, by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_http_request_duration_seconds",
			Help:    "HTTP request latency, by method and route template.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// routeLabel is the matched route template; requests no route matched share one label.
func routeLabel(c echo.Context) string {
	if p := c.Path(); p != "" && p != "/*" {
		return p
	}
	return "unmatched"
}

// middleware records every request after the error handler has decided its status.
func (m *httpMetrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // commits the response so the status below is final
		}
		route := routeLabel(c)
		m.requests.WithLabelValues(c.Request().Method, route, strconv.Itoa(c.Response().Status)).Inc()
		m.duration.WithLabelValues(c.Request().Method, route).Observe(time.Since(start).Seconds())
		return nil
	}
}
