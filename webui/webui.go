// Package webui is Strata's web UI for people, served at /ui/ by `strata serve` and `strata dev`:
// stores of every kind with their maintenance state, a store's schema, versions and maintenance
// (flush, merge and compact buttons, a failing operation's error and its retry), a record
// browser (base table, WAL or both; the SQL filter; keyset pages; one record's JSON; blob
// downloads), a datagen item's folded state and event timeline, and an SQL console.
//
// Pages are html/template, rendered on the server; htmx (vendored in assets/, 0BSD) swaps parts
// of a page; everything is embedded in the binary. Every page reads through the HTTP API itself,
// in process (apicall.go): the UI has no data path, validation or limit of its own, and answers
// what the API answers. Access takes the API's tokens (session.go).
package webui

import (
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/workflows"
)

//go:embed assets templates
var files embed.FS

// Options configure the UI.
type Options struct {
	// API is the HTTP API the pages read through (the same server's handler).
	API http.Handler
	// APIToken and AdminToken are the API's tokens: a person signs in with one of them (none
	// set: no sign-in). The admin token (or the API token when no admin token is set) unlocks the
	// maintenance buttons and the stores' maintenance state.
	APIToken, AdminToken string
	// TemporalUIURL, when set, links each store to its maintenance workflow in the Temporal UI
	// (e.g. http://127.0.0.1:8233), in TemporalNamespace (default "default").
	TemporalUIURL, TemporalNamespace string
	Log                              *slog.Logger
}

// UI serves the pages.
type UI struct {
	opts  Options
	pages map[string]*template.Template
	keys  sessionKeys
}

// Register adds the UI's routes under /ui/ to e.
func Register(e *echo.Echo, opts Options) error {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.TemporalNamespace == "" {
		opts.TemporalNamespace = "default"
	}
	u := &UI{opts: opts, keys: newSessionKeys(opts.APIToken, opts.AdminToken)}
	var err error
	if u.pages, err = parsePages(); err != nil {
		return err
	}
	assets, err := fs.Sub(files, "assets")
	if err != nil {
		return err
	}
	e.GET("/ui", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/ui/") })
	g := e.Group("/ui")
	g.GET("/assets/*", echo.WrapHandler(http.StripPrefix("/ui/assets/", assetHandler(assets))))
	g.GET("/login", u.loginPage)
	g.POST("/login", u.login, u.sameOrigin)
	g.POST("/logout", u.logout, u.sameOrigin)
	in := g.Group("", u.signedIn)
	in.GET("/", u.storesPage)
	in.GET("/tenants", u.tenantsPage)
	in.GET("/s/:kind/:name", u.storePage)
	in.POST("/s/:kind/:name/do/:action", u.storeAction, u.sameOrigin)
	in.GET("/s/:kind/:name/records", u.recordsPage)
	in.GET("/s/:kind/:name/record", u.recordPage)
	in.GET("/s/:kind/:name/blob", u.blob)
	in.GET("/s/:kind/:name/item", u.datagenItemPage)
	in.GET("/s/:kind/:name/sql", u.sqlPage)
	in.POST("/s/:kind/:name/sql", u.sqlRun, u.sameOrigin)
	in.GET("/s/:kind/:name/sql/download", u.sqlDownload)
	return nil
}

// assetHandler serves the embedded assets, cached for an hour.
func assetHandler(assets fs.FS) http.Handler {
	files := http.FileServer(http.FS(assets))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// storeRef is the store a route names, checked: a served kind and a valid name.
type storeRef struct {
	Kind  catalog.Kind
	Name  string
	Route string // the kind's collection in the API
}

func (r storeRef) apiPath(rest ...string) string {
	p := "/api/v1/" + r.Route + "/" + url.PathEscape(r.Name)
	for _, s := range rest {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// UIPath is the store's page.
func (r storeRef) UIPath(rest ...string) string {
	p := "/ui/s/" + string(r.Kind) + "/" + url.PathEscape(r.Name)
	if len(rest) > 0 {
		p += "/" + strings.Join(rest, "/")
	}
	return p
}

func (r storeRef) String() string { return string(r.Kind) + "/" + r.Name }

func storeOf(c echo.Context) (storeRef, error) {
	k, err := catalog.ParseKind(c.Param("kind"))
	if err != nil {
		return storeRef{}, echo.NewHTTPError(http.StatusNotFound, "no such kind of store")
	}
	name, err := url.PathUnescape(c.Param("name"))
	if err != nil || catalog.ValidateName(name) != nil {
		return storeRef{}, echo.NewHTTPError(http.StatusNotFound, "no such store name")
	}
	served, err := kinds.Of(k)
	if err != nil {
		return storeRef{}, echo.NewHTTPError(http.StatusNotFound, "this server does not serve that kind of store")
	}
	return storeRef{Kind: k, Name: name, Route: served.Route}, nil
}

// temporalLink is the store's maintenance workflow in the Temporal UI ("" when not configured).
func (u *UI) temporalLink(r storeRef) string {
	if u.opts.TemporalUIURL == "" {
		return ""
	}
	id := workflows.StoreRef{Kind: r.Kind, Name: r.Name}.WorkflowID()
	return strings.TrimRight(u.opts.TemporalUIURL, "/") + "/namespaces/" + url.PathEscape(u.opts.TemporalNamespace) +
		"/workflows/" + url.PathEscape(id)
}
