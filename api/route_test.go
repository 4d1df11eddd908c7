package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/routing"
)

// Two workers over one catalog answer the same route for a store, and every append answer names
// the preferred workers; without a membership the route names none and the worker is preferred.
func TestRouteAndPreferredWorkersHeader(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	var members []*routing.Membership
	var done []chan struct{}
	with := func(instance string) func(*api.Deps) {
		return func(d *api.Deps) {
			m := routing.New(c.cat, routing.Options{Self: routing.Member{Instance: instance, URL: "http://" + instance + ":3000"},
				FanOut: 1, Interval: 20 * time.Millisecond, Log: d.Log})
			ch := make(chan struct{})
			go func() { defer close(ch); m.Run(ctx) }()
			members, done = append(members, m), append(done, ch)
			d.Routing = m
		}
	}
	t.Cleanup(func() {
		cancel()
		for _, ch := range done {
			<-ch
		}
	})
	w1, w2 := c.worker("w1", with("w1")), c.worker("w2", with("w2"))
	require.Eventually(t, func() bool { return len(members[0].Live()) == 2 && len(members[1].Live()) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "r"}, nil))
	var r1, r2 api.RouteResponse
	require.Equal(t, http.StatusOK, w1.do(t, "GET", "/api/v1/rollouts/r/route", nil, &r1))
	require.Equal(t, http.StatusOK, w2.do(t, "GET", "/api/v1/rollouts/r/route", nil, &r2))
	require.Equal(t, r1.Workers, r2.Workers)
	require.Len(t, r1.Workers, 1)
	require.NotEqual(t, r1.Preferred, r2.Preferred, "exactly one of the two is preferred with a fan-out of 1")
	req := httptest.NewRequest("POST", "/api/v1/rollouts/r/records", strings.NewReader(`{"records":[{"id":"1","rollout_id":"t"}]}`))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	rec := httptest.NewRecorder()
	w2.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, "a worker that is not preferred still accepts")
	require.Equal(t, r1.Workers[0].URL, rec.Header().Get(api.HeaderPreferredWorkers))
	status, _ := errCode(t, w1, "GET", "/api/v1/rollouts/missing/route", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = errCode(t, w1, "GET", "/api/v1/rollouts/..%2Fx/route", nil)
	require.Equal(t, http.StatusBadRequest, status)

	w3 := c.worker("w3")
	var r3 api.RouteResponse
	require.Equal(t, http.StatusOK, w3.do(t, "GET", "/api/v1/rollouts/r/route", nil, &r3))
	require.True(t, r3.Preferred)
	require.Empty(t, r3.Workers)
}
