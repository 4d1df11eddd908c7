// The registry routes every store kind has — create, list, get, delete, flush, merge the WAL —
// registered by looping over the kinds the server serves (kinds.Served), each kind's own routes
// after them. A kind added to kinds is served here once its create handler and its own routes
// are named in kindRoutes.
package api

import (
	"bufio"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
)

// kindRoutes is what the API adds for each kind: its create handler (each kind declares its
// schema its own way) and its own routes.
type kindRoutes struct {
	create   func(h *handlers) echo.HandlerFunc
	register func(h *handlers, g *routeGroup)
	// listKey is the member of a store listing that holds the stores: "stores", or the kind's own
	// name in lance-context's API ("contexts": ListContextsResponse).
	listKey string
}

// listKeyOf is kind's listKey.
func listKeyOf(kind catalog.Kind) string {
	if k := routesOf[kind].listKey; k != "" {
		return k
	}
	return "stores"
}

var routesOf = map[catalog.Kind]kindRoutes{
	catalog.KindRollout: {create: func(h *handlers) echo.HandlerFunc { return h.createRollout }, register: (*handlers).registerRollouts},
	catalog.KindGeneric: {create: func(h *handlers) echo.HandlerFunc { return h.createGeneric }, register: (*handlers).registerGeneric},
	catalog.KindDatagen: {create: func(h *handlers) echo.HandlerFunc { return h.createDatagen }, register: (*handlers).registerDatagen},
	catalog.KindContext: {create: func(h *handlers) echo.HandlerFunc { return h.createContext }, register: (*handlers).registerContexts, listKey: "contexts"},
}

// registerStores registers, for every kind served, its registry routes under /<route> and then
// its own routes.
func (h *handlers) registerStores(g *routeGroup) {
	for _, k := range kinds.Served() {
		r, ok := routesOf[k.Name]
		if !ok {
			panic("api: no routes for served kind " + string(k.Name)) // a kind added without its API
		}
		base := "/" + k.Route
		g.POST(base, r.create(h))
		g.GET(base, h.listStores(k.Name))
		g.GET(base+"/:name", h.getStore(k.Name))
		g.DELETE(base+"/:name", h.deleteStore(k.Name))
		g.POST(base+"/:name/flush", h.flushStore(k.Name))
		g.GET(base+"/:name/route", h.route(k.Name))
		if k.Name != catalog.KindRollout { // rollouts merge at lance-context's /internal/merge-wal/:name
			g.POST(base+"/:name/merge-wal", h.mergeWAL(k.Name))
		}
		g.POST(base+"/:name/query", h.queryStore(k.Name))
		h.registerConsumers(g, base, k.Name)
		if k.Name == catalog.KindRollout || k.Name == catalog.KindGeneric {
			g.POST(base+"/:name/get-rows", h.getRows(k.Name))
		}
		r.register(h, g)
	}
}

// listStores lists the live stores of kind in name order. Without ?limit it answers every store
// (as lance-context does), streamed a catalog page at a time; with ?limit one page and its
// next_cursor. ?prefix and ?cursor narrow either.
func (h *handlers) listStores(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		limit, _, cursor, err := pageParams(c)
		if err != nil {
			return err
		}
		if !c.QueryParams().Has("limit") {
			return h.streamStores(c, kind, cursor)
		}
		p, err := h.deps.Stores.Catalog().ListStores(c.Request().Context(), kind,
			catalog.ListOptions{Prefix: c.QueryParam("prefix"), After: cursor, Limit: limit})
		if err != nil {
			return err
		}
		out := StoreList{Stores: make([]StoreInfo, 0, len(p.Stores)), NextCursor: p.Next}
		for _, st := range p.Stores {
			out.Stores = append(out.Stores, StoreInfo{Name: st.Name, URI: h.deps.Stores.PublicURI(st)})
		}
		if listKeyOf(kind) == "contexts" {
			return c.JSON(http.StatusOK, ContextList{Contexts: out.Stores, NextCursor: out.NextCursor})
		}
		return c.JSON(http.StatusOK, out)
	}
}

// streamStorePage is how many stores streamStores reads from the catalog at a time (a variable
// for tests only).
var streamStorePage = 10_000

// streamStores answers {"stores": [...]} with every live store of kind after cursor (matching
// ?prefix), reading the catalog a page at a time and writing each page as it comes, so a listing
// of 100k stores never holds them all. The first page is read before the status is sent, so a
// catalog that cannot be reached is still a clean 503; a failure after that ends the response
// short (the client sees truncated JSON, never a complete-looking partial list).
func (h *handlers) streamStores(c echo.Context, kind catalog.Kind, cursor string) error {
	ctx := c.Request().Context()
	opts := catalog.ListOptions{Prefix: c.QueryParam("prefix"), After: cursor, Limit: streamStorePage}
	p, err := h.deps.Stores.Catalog().ListStores(ctx, kind, opts)
	if err != nil {
		return err
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	res.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(res, 64<<10)
	enc := json.NewEncoder(bw)
	_, _ = bw.WriteString(`{"` + listKeyOf(kind) + `":[`)
	first := true
	for {
		for _, st := range p.Stores {
			if !first {
				_ = bw.WriteByte(',')
			}
			first = false
			if err := enc.Encode(StoreInfo{Name: st.Name, URI: h.deps.Stores.PublicURI(st)}); err != nil {
				return err
			}
		}
		if p.Next == "" {
			break
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		opts.After = p.Next
		if p, err = h.deps.Stores.Catalog().ListStores(ctx, kind, opts); err != nil {
			if h.deps.Log != nil {
				h.deps.Log.Warn("listing stores failed mid-stream; the response ends short", "kind", kind, "err", err)
			}
			return nil // the status is sent: the truncated body is the client's signal
		}
	}
	_, _ = bw.WriteString("]}\n")
	return bw.Flush()
}

func (h *handlers) getStore(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		return h.withStoreEntry(c, kind, func(s *lsm.Store, st catalog.Store) error {
			v, err := tableVersion(c.Request().Context(), s)
			if err != nil {
				return err
			}
			return c.JSON(http.StatusOK, StoreInfo{Name: st.Name, URI: h.deps.Stores.PublicURI(st), Version: &v, Schema: st.Schema})
		})
	}
}

func (h *handlers) deleteStore(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := c.Param("name")
		if err := catalog.ValidateName(name); err != nil {
			return err
		}
		if err := h.deps.Stores.Delete(c.Request().Context(), kind, name); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	}
}

func (h *handlers) flushStore(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		return h.withStore(c, kind, func(s *lsm.Store) error {
			if err := h.deps.Stores.Flush(c.Request().Context(), kind, c.Param("name"), s); err != nil {
				return err
			}
			return c.NoContent(http.StatusNoContent)
		})
	}
}
