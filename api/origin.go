// Requests from places the operator did not mean: a browser page on another site (cross-site
// request forgery: a form or fetch that changes state without the page being allowed to), and a
// Host header this server is not known by (DNS rebinding: a page whose name resolves to this
// server reads and writes it as its own origin). Both are refused before any route runs.
package api

import (
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// crossOriginGuard refuses state-changing browser requests from another origin (Sec-Fetch-Site,
// or Origin against Host: net/http's CrossOriginProtection) with 403 FORBIDDEN. Requests without
// those headers (every non-browser client) pass.
func crossOriginGuard() echo.MiddlewareFunc {
	guard := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := guard.Check(c.Request()); err != nil {
				return &APIError{Status: http.StatusForbidden, Code: CodeForbidden,
					Message: "cross-origin browser requests may not change anything here"}
			}
			return next(c)
		}
	}
}

// allowedHostsGuard refuses (403 FORBIDDEN) a request whose Host header is not one of allowed
// (host names or addresses, compared without the port, case-insensitively); empty allows every
// host.
func allowedHostsGuard(allowed []string) echo.MiddlewareFunc {
	hosts := make([]string, len(allowed))
	for i, h := range allowed {
		hosts[i] = strings.ToLower(strings.Trim(strings.TrimSpace(h), "[]"))
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if len(hosts) == 0 {
				return next(c)
			}
			host := c.Request().Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !slices.Contains(hosts, strings.ToLower(strings.Trim(host, "[]"))) {
				return &APIError{Status: http.StatusForbidden, Code: CodeForbidden,
					Message: "this server is not served under that host name (--allowed-hosts)"}
			}
			return next(c)
		}
	}
}
