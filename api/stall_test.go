package api_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
)

// A body that stalls is 408 REQUEST_TIMEOUT on every route that reads one: JSON, multipart and
// Arrow appends, store creation, admin routes, datagen events, checkout and compaction.
func TestAStalledBodyIs408OnEveryRoute(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", func(d *api.Deps) { d.BodyIdleTimeout = 200 * time.Millisecond })
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen", map[string]any{"name": "d"}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "schema": {"columns": [["id", "string"]]}}`, nil))
	srv := httptest.NewServer(api.WithDeadline(w.e, time.Minute))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct{ path, ct, body string }{
		{"/api/v1/rollouts", "application/json", `{"name": "x`},
		{"/api/v1/generic", "application/json", `{"name": "x`},
		{"/api/v1/datagen", "application/json", `{"name": "x`},
		{"/api/v1/rollouts/a/records", "application/json", `{"records": [{"id": "x`},
		{"/api/v1/rollouts/a/records", "multipart/form-data; boundary=zz", "--zz\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"rec"},
		{"/api/v1/rollouts/a/records", "multipart/form-data; boundary=zz", "--z"},
		{"/api/v1/rollouts/a/records", api.MIMEArrowStream, "\xff\xff\xff\xff"},
		{"/api/v1/generic/g/rows", "application/json", `{"rows": [`},
		{"/api/v1/datagen/d/events", "application/json", `{"events": [`},
		{"/api/v1/datagen/d/events", api.MIMEArrowStream, "\xff\xff"},
		{"/api/v1/rollouts/a/checkout", "application/json", `{"vers`},
		{"/api/v1/rollouts/a/compact", "application/json", `{"tar`},
		{"/api/v1/admin/rollout/a/maintenance", "application/json", `{"op": "`},
	} {
		head := "POST " + c.path + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + c.ct + "\r\nContent-Length: 100000"
		status, _ := rawRequest(t, addr, head, c.body, 5*time.Second)
		require.Equal(t, http.StatusRequestTimeout, status, "%s %s %q", c.path, c.ct, c.body)
		head = "POST " + c.path + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + c.ct + "\r\nTransfer-Encoding: chunked"
		status, _ = rawRequest(t, addr, head, strconv.FormatInt(int64(len(c.body)), 16)+"\r\n"+c.body+"\r\n", 5*time.Second)
		require.Equal(t, http.StatusRequestTimeout, status, "chunked %s %s %q", c.path, c.ct, c.body)
	}
}
