// Routing: a store's preferred workers (GET …/{name}/route). Routed returns a client that talks to
// the first of them, so a fleet of writers sends each store's appends to few workers (few write
// shards for every read to consult). Any worker accepts any append: routing is only advice.
package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// RouteMember is a live API worker.
type RouteMember struct {
	Instance string `json:"instance"`
	URL      string `json:"url"`
}

// Route is a store's preferred workers, best first.
type Route struct {
	Kind        string        `json:"kind"`
	Name        string        `json:"name"`
	Workers     []RouteMember `json:"workers"`
	FanOut      int           `json:"fan_out"`
	Preferred   bool          `json:"preferred"`
	LiveWorkers int           `json:"live_workers"`
}

// Route asks the server for the store's preferred workers.
func (c *Client) Route(ctx context.Context, kind Kind, name string) (Route, error) {
	var r Route
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(kind, name, "route")}, nil, &r)
	return r, err
}

// routeTTL: how long Routed reuses a store's route before asking again.
const routeTTL = 30 * time.Second

// routeCache holds Routed's answers of one client (and of the clients it returned, which carry
// the same credentials), by base URL and store. A cache per client: a routed client carries its
// parent's tokens, so it must never be handed to a client with other ones.
type routeCache struct {
	mu sync.Mutex // guards m
	m  map[string]routedEntry
}

type routedEntry struct {
	c  *Client
	at time.Time
}

// Routed returns a client for the store's first preferred worker (with this client's tokens and
// settings), or this client when the server names none, names this one, or names a worker this
// client would not send its token to (https downgraded to http). The answer is cached in this
// client for 30 s.
func (c *Client) Routed(ctx context.Context, kind Kind, name string) (*Client, error) {
	key := c.base.String() + " " + string(kind) + "/" + name
	routes := c.routes
	routes.mu.Lock()
	if e, ok := routes.m[key]; ok && time.Since(e.at) < routeTTL {
		routes.mu.Unlock()
		return e.c, nil
	}
	routes.mu.Unlock()
	r, err := c.Route(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	out := c
	if len(r.Workers) > 0 && !r.Preferred {
		if u, err := url.Parse(strings.TrimRight(r.Workers[0].URL, "/")); err == nil && u.Host != "" &&
			(u.Scheme == c.base.Scheme || (u.Scheme == "https" && c.base.Scheme == "http")) {
			routed := *c
			routed.base = u
			out = &routed
		}
	}
	routes.mu.Lock()
	if len(routes.m) > 10_000 { // a bound, not an LRU: start over
		routes.m = map[string]routedEntry{}
	}
	routes.m[key] = routedEntry{out, time.Now()}
	routes.mu.Unlock()
	return out, nil
}
