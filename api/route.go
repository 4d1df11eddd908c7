// Store routing: GET /api/v1/{collection}/{name}/route answers the store's preferred workers
// (package routing: rendezvous hashing over the live workers in the catalog), and every append
// answer carries them in the Strata-Preferred-Workers header, so clients send a store's appends to
// few workers and its reads consult few write shards. Advice only: every worker accepts every
// append.
package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/routing"
)

// HeaderPreferredWorkers lists the store's preferred workers' URLs, best first, comma-separated.
const HeaderPreferredWorkers = "Strata-Preferred-Workers"

// RouteResponse answers GET …/{name}/route.
type RouteResponse struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Workers are the store's preferred workers, best first (fan_out of them, or every live
	// worker when fewer).
	Workers []routing.Member `json:"workers"`
	FanOut  int              `json:"fan_out"`
	// Preferred: the worker that answered is one of them.
	Preferred bool `json:"preferred"`
	// LiveWorkers is how many workers the answering worker sees alive.
	LiveWorkers int `json:"live_workers"`
}

// route answers the store's preferred workers (the store must exist).
func (h *handlers) route(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := c.Param("name")
		if err := catalog.ValidateName(name); err != nil {
			return err
		}
		if _, err := h.deps.Stores.Catalog().GetStore(c.Request().Context(), kind, name); err != nil {
			return err
		}
		out := RouteResponse{Kind: string(kind), Name: name, FanOut: 1, LiveWorkers: 1}
		if m := h.deps.Routing; m != nil {
			out.Workers, out.FanOut, out.LiveWorkers = m.Preferred(string(kind), name), m.FanOut(), len(m.Live())
			for _, w := range out.Workers {
				out.Preferred = out.Preferred || w.Instance == m.Self().Instance
			}
		} else {
			out.Workers, out.Preferred = []routing.Member{}, true
		}
		return c.JSON(http.StatusOK, out)
	}
}

// preferredWorkers sets the Strata-Preferred-Workers header on the answers of a store's append
// routes.
func (h *handlers) preferredWorkers(kind catalog.Kind) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if m := h.deps.Routing; m != nil {
				var urls []string
				for _, w := range m.Preferred(string(kind), c.Param("name")) {
					if w.URL != "" {
						urls = append(urls, w.URL)
					}
				}
				if len(urls) > 0 {
					c.Response().Header().Set(HeaderPreferredWorkers, strings.Join(urls, ", "))
				}
			}
			return next(c)
		}
	}
}
