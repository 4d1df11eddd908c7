package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/client"
)

// A 503 with Retry-After (backpressure: nothing was written) is retried after the wait the
// server asks for, with the same body; without Retry-After, or past the retries, the error is
// returned.
func TestBackpressureIsRetriedWithTheSameBody(t *testing.T) {
	var calls atomic.Int32
	var bodies []string
	busy := int32(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		data, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(data))
		if n <= busy {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error": {"code": "OVERLOADED", "message": "busy"}}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"version": 3, "count": 1})
	}))
	defer srv.Close()
	c, err := client.New(srv.URL)
	require.NoError(t, err)
	start := time.Now()
	res, err := c.Append(context.Background(), client.KindRollout, "s", []json.RawMessage{json.RawMessage(`{"id":"a"}`)}, false)
	require.NoError(t, err)
	require.Equal(t, 1, res.Count)
	require.EqualValues(t, 3, calls.Load())
	require.GreaterOrEqual(t, time.Since(start), 2*time.Second, "the server's Retry-After is honoured")
	require.Equal(t, bodies[0], bodies[2], "the body is sent again whole")

	calls.Store(0)
	busy = 100
	few, err := client.New(srv.URL, client.WithRetries(1, time.Second))
	require.NoError(t, err)
	_, err = few.Append(context.Background(), client.KindRollout, "s", []json.RawMessage{json.RawMessage(`{"id":"a"}`)}, false)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "OVERLOADED", e.Code)
	require.EqualValues(t, 2, calls.Load())
}

// Only what cannot have taken effect is retried: a request deadline's 503, a storage fault and an
// error without a code are returned after one attempt, even with Retry-After.
func TestOnlyRequestsThatCannotHaveTakenEffectAreRetried(t *testing.T) {
	for _, code := range []string{"DEADLINE_EXCEEDED", "STORAGE_UNAVAILABLE", "FENCED", ""} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error": {"code": "` + code + `", "message": "x"}}`))
		}))
		c, err := client.New(srv.URL)
		require.NoError(t, err)
		_, err = c.Append(context.Background(), client.KindRollout, "s", []json.RawMessage{json.RawMessage(`{"id":"a"}`)}, false)
		srv.Close()
		require.Error(t, err)
		require.EqualValues(t, 1, calls.Load(), "code %q is not retried", code)
	}
}

// The bearer token never follows a redirect to another host.
func TestTheTokenNeverFollowsARedirectToAnotherHost(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	// 127.0.0.1 and localhost are different hosts to the client.
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithToken("SECRET"))
	require.NoError(t, err)
	_, _ = c.GetStore(context.Background(), client.KindRollout, "s")
	require.Empty(t, leaked.Load(), "the other host saw the token")
}

// A refused connection sent nothing: it is retried until the server is there.
func TestARefusedConnectionIsRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there for now
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"name": "s", "uri": "u", "version": 1}`))
	}), ReadHeaderTimeout: time.Second}
	started := make(chan error, 1)
	go func() {
		time.Sleep(700 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		started <- err
		if err == nil {
			_ = srv.Serve(l)
		}
	}()
	defer srv.Close()
	c, err := client.New("http://" + addr)
	require.NoError(t, err)
	st, err := c.GetStore(context.Background(), client.KindRollout, "s")
	require.NoError(t, <-started)
	require.NoError(t, err, "the request was sent again once the server listened")
	require.Equal(t, "s", st.Name)
}
