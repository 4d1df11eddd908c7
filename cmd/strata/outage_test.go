package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
)

// forwarder relays TCP connections from a local port to target once started: before that the
// port refuses connections, as a PostgreSQL that is down does.
type forwarder struct {
	port   int
	target string
	ln     net.Listener
	wg     sync.WaitGroup
}

func (f *forwarder) start(t *testing.T) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", f.port))
	require.NoError(t, err)
	f.ln = ln
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.wg.Add(2)
			go func() { defer f.wg.Done(); _, _ = io.Copy(up, c); up.Close() }()
			go func() { defer f.wg.Done(); _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (f *forwarder) stop() {
	if f.ln != nil {
		f.ln.Close()
	}
}

func TestServeStartsWhileThePostgreSQLCatalogIsDown(t *testing.T) {
	db, err := url.Parse(testenv.Database(t))
	require.NoError(t, err)
	pgPort, err := testenv.FreePort()
	require.NoError(t, err)
	fw := &forwarder{port: pgPort, target: db.Host}
	defer fw.stop()
	down := *db
	down.Host = fmt.Sprintf("127.0.0.1:%d", pgPort)

	port, err := testenv.FreePort()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveConfig{
			ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), DatabaseURL: down.String(), DataURL: t.TempDir(),
			StoreCacheCapacity: 10, FlushInterval: time.Second, RequestTimeout: 10 * time.Second,
			LogLevel: "error", LogFormat: "text", ShutdownTimeout: 5 * time.Second,
		})
	}()
	health := func() (int, map[string]any) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/health", port))
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	// Down: the worker is up, says why it cannot serve, and answers data routes 503 + Retry-After.
	require.Eventually(t, func() bool { s, _ := health(); return s == http.StatusServiceUnavailable }, 10*time.Second, 50*time.Millisecond)
	_, body := health()
	require.Equal(t, "degraded", body["status"])
	require.Contains(t, body["catalog"], "starting")
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/rollouts", port))
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	resp.Body.Close()
	select {
	case err := <-done:
		t.Fatalf("serve exited while PostgreSQL was down: %v", err)
	default:
	}

	// Up: the worker serves without a restart.
	fw.start(t)
	require.Eventually(t, func() bool { s, _ := health(); return s == http.StatusOK }, 40*time.Second, 100*time.Millisecond)
	resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/rollouts", port))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// Every connection of the API has a bound: headers, idle keep-alives and responses (a client that
// stops reading), but no whole-body read timeout (uploads are bounded by the request deadline and
// the body idle timeout instead).
func TestTheAPIServerBoundsEveryConnection(t *testing.T) {
	srv := newHTTPServer(serveConfig{RequestTimeout: time.Minute}, http.NotFoundHandler())
	require.Equal(t, 10*time.Second, srv.ReadHeaderTimeout)
	require.Equal(t, 2*time.Minute, srv.IdleTimeout)
	require.Equal(t, time.Minute+30*time.Second, srv.WriteTimeout)
	require.Zero(t, srv.ReadTimeout)
	require.Positive(t, srv.MaxHeaderBytes)
}

// `strata worker` opens its runtime as serve does: retrying while PostgreSQL is unreachable.
func TestOpeningTheRuntimeWaitsForThePostgreSQLCatalog(t *testing.T) {
	db, err := url.Parse(testenv.Database(t))
	require.NoError(t, err)
	pgPort, err := testenv.FreePort()
	require.NoError(t, err)
	fw := &forwarder{port: pgPort, target: db.Host}
	defer fw.stop()
	down := *db
	down.Host = fmt.Sprintf("127.0.0.1:%d", pgPort)
	retries := 0
	rt, err := openRuntimeRetrying(context.Background(), serveConfig{DatabaseURL: down.String(), DataURL: t.TempDir(),
		StoreCacheCapacity: 4}, slog.New(slog.NewTextHandler(io.Discard, nil)), func(err error) {
		retries++
		if retries == 1 {
			fw.start(t) // PostgreSQL comes back after the first failure
		}
	})
	require.NoError(t, err)
	rt.close(context.Background())
	require.Positive(t, retries)
}
