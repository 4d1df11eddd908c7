package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/routing"
)

// Routed follows the server's route to the store's first preferred worker and keeps the same
// client when the answering worker is the preferred one; Route answers the rendezvous rank.
func TestRoutedFollowsThePreferredWorker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	members := []routing.Member{{Instance: "w", URL: "http://self.invalid"}}
	base := server(t, func(d *api.Deps) {
		cat := d.Stores.Catalog()
		for i := range 8 {
			m := routing.Member{Instance: fmt.Sprintf("x%d", i), URL: fmt.Sprintf("http://x%d.invalid:3000", i)}
			require.NoError(t, cat.HeartbeatWorker(ctx, m.Instance, m.URL))
			members = append(members, m)
		}
		// A long interval: the other members heartbeat once, above, and must stay live for the test.
		m := routing.New(cat, routing.Options{Self: members[0], FanOut: 1, Interval: 10 * time.Second})
		go func() { defer close(done); m.Run(ctx) }()
		require.Eventually(t, func() bool { return len(m.Live()) == 9 }, 5*time.Second, 10*time.Millisecond)
		d.Routing = m
	})
	t.Cleanup(func() { cancel(); <-done })
	c, err := client.New(base)
	require.NoError(t, err)
	// One store the answering worker is preferred for, one it is not.
	var self, other string
	for i := 0; self == "" || other == ""; i++ {
		name := fmt.Sprintf("s%d", i)
		if routing.Rank(routing.StoreKey("rollout", name), members, 1)[0].Instance == "w" {
			self = name
		} else if other == "" {
			other = name
		}
	}
	for _, name := range []string{self, other} {
		_, _, err := c.CreateStore(ctx, client.KindRollout, name, client.CreateOptions{})
		require.NoError(t, err)
	}
	r, err := c.Route(ctx, client.KindRollout, other)
	require.NoError(t, err)
	want := routing.Rank(routing.StoreKey("rollout", other), members, 1)[0]
	require.Equal(t, []client.RouteMember{{Instance: want.Instance, URL: want.URL}}, r.Workers)
	require.False(t, r.Preferred)
	require.Equal(t, 9, r.LiveWorkers)
	routed, err := c.Routed(ctx, client.KindRollout, other)
	require.NoError(t, err)
	require.Equal(t, want.URL, routed.BaseURL())
	routed, err = c.Routed(ctx, client.KindRollout, self)
	require.NoError(t, err)
	require.Same(t, c, routed)
	_, err = c.Route(ctx, client.KindRollout, "missing")
	require.True(t, client.IsNotFound(err))
}

// Routed clients keep the credentials of the client they came from: two clients of one API with
// different tokens never share a cached route (each sends its own token to the routed worker).
func TestRoutedClientsKeepTheirOwnTokens(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"rollout","name":"s","workers":[],"preferred":true}`))
	}))
	defer worker.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"kind":"rollout","name":"s","workers":[{"instance":"w","url":%q}],"preferred":false}`, worker.URL)
	}))
	defer front.Close()
	ctx := context.Background()
	for _, token := range []string{"one", "two"} {
		c, err := client.New(front.URL, client.WithToken(token))
		require.NoError(t, err)
		routed, err := c.Routed(ctx, client.KindRollout, "s")
		require.NoError(t, err)
		require.Equal(t, worker.URL, routed.BaseURL())
		_, err = routed.Route(ctx, client.KindRollout, "s")
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"Bearer one", "Bearer two"}, seen)
}
