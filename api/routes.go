// routeGroup: routes registered under a path prefix, each carrying the group's middleware.
package api

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
)

// routeGroup registers routes under prefix, each with the group's middleware (outermost first)
// followed by its own. Echo's Group with middleware would also register a catch-all not-found
// route for its whole prefix so that the middleware runs for unknown paths; that route wins over
// the router's method check, so a wrong method on a known path answered 404 instead of 405 (with
// the methods the path serves in Allow). Here only the routes given exist: an unknown path is the
// router's 404 and a wrong method its 405, both before any of the group's middleware runs.
//
// A GET route also answers HEAD (the same handler; net/http drops the body it writes), as HTTP
// asks of every server and as load balancers' and clients' existence checks expect.
type routeGroup struct {
	e          *echo.Echo
	prefix     string
	middleware []echo.MiddlewareFunc
}

func newRouteGroup(e *echo.Echo, prefix string, middleware ...echo.MiddlewareFunc) *routeGroup {
	return &routeGroup{e: e, prefix: prefix, middleware: middleware}
}

func (g *routeGroup) add(method, path string, h echo.HandlerFunc, middleware []echo.MiddlewareFunc) {
	g.e.Add(method, g.prefix+path, h, append(slices.Clone(g.middleware), middleware...)...)
}

// GET registers a GET route, and HEAD on the same path.
func (g *routeGroup) GET(path string, h echo.HandlerFunc, middleware ...echo.MiddlewareFunc) {
	g.add(http.MethodGet, path, h, middleware)
	g.add(http.MethodHead, path, h, middleware)
}

// POST registers a POST route.
func (g *routeGroup) POST(path string, h echo.HandlerFunc, middleware ...echo.MiddlewareFunc) {
	g.add(http.MethodPost, path, h, middleware)
}

// DELETE registers a DELETE route.
func (g *routeGroup) DELETE(path string, h echo.HandlerFunc, middleware ...echo.MiddlewareFunc) {
	g.add(http.MethodDelete, path, h, middleware)
}

// PUT registers a PUT route.
func (g *routeGroup) PUT(path string, h echo.HandlerFunc, middleware ...echo.MiddlewareFunc) {
	g.add(http.MethodPut, path, h, middleware)
}

// PATCH registers a PATCH route.
func (g *routeGroup) PATCH(path string, h echo.HandlerFunc, middleware ...echo.MiddlewareFunc) {
	g.add(http.MethodPatch, path, h, middleware)
}
