// Package testenv gives tests the real services they need: a PostgreSQL server (the one named by
// STRATA_TEST_DATABASE_URL, or a throwaway cluster started through scripts/pg.sh) and a fresh
// database per test, dropped when the test ends.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

// adminURL is the server-level URL (database "postgres") that test databases are created from;
// set by RunWithPostgres.
var adminURL string

// RunWithPostgres is a TestMain body: it makes a PostgreSQL server available for the package's
// tests (starting a throwaway one when STRATA_TEST_DATABASE_URL is unset), runs them, stops what
// it started and returns the exit code.
func RunWithPostgres(m *testing.M) int {
	if u := os.Getenv("STRATA_TEST_DATABASE_URL"); u != "" {
		adminURL = u
		return m.Run()
	}
	stop, u, err := startThrowawayPostgres()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv: cannot start PostgreSQL:", err)
		return 1
	}
	defer stop()
	adminURL = u
	return m.Run()
}

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("testenv: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// FreePort returns a TCP port that nothing listens on at 127.0.0.1 now, for a service a test
// starts later. It is chosen below the kernel's ephemeral range (/proc/sys/net/ipv4/
// ip_local_port_range; 32768–60999 here): a port the kernel hands out by itself — an outgoing
// connection's, or one a server asked port 0 for, like the Temporal dev server's internal ones —
// is then never the one a test reserved and has not bound yet. Where that range starts too low to
// leave room, the kernel picks.
func FreePort() (int, error) {
	lo, hi := 22000, ephemeralPortsFrom() // the fixed ports of `make test`'s emulators lie below
	if hi-lo < 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	for range 200 {
		port := lo + mrand.IntN(hi-lo)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("testenv: no free port in %d-%d", lo, hi-1)
}

// ephemeralPortsFrom is the first port of the kernel's ephemeral range (32768 when unknown).
func ephemeralPortsFrom() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var from, to int
	if _, err := fmt.Sscan(string(data), &from, &to); err != nil || from <= 0 {
		return 32768
	}
	return from
}

func startThrowawayPostgres() (stop func(), url string, err error) {
	dir, err := os.MkdirTemp("", "strata-pg-")
	if err != nil {
		return nil, "", err
	}
	// The cluster runs as the postgres user when we are root: it must reach the directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, "", err
	}
	port, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	script := filepath.Join(RepoRoot(), "scripts", "pg.sh")
	env := append(os.Environ(),
		"STRATA_PG_DIR="+filepath.Join(dir, "pg"), fmt.Sprintf("STRATA_PG_PORT=%d", port), "STRATA_PG_DB=postgres")
	run := func(arg string) error {
		cmd := exec.Command(script, arg)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %w\n%s", script, arg, err, out)
		}
		return nil
	}
	if err := run("start"); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	stop = func() {
		_ = run("stop")
		os.RemoveAll(dir)
	}
	return stop, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), nil
}

// Database creates an empty database for this test and returns its URL; it is dropped when the
// test ends. Only call it from a package whose TestMain uses RunWithPostgres.
func Database(tb testing.TB) string {
	tb.Helper()
	if adminURL == "" {
		tb.Fatal("testenv.Database: the package's TestMain must call testenv.RunWithPostgres")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		tb.Fatalf("testenv: connect to %s: %v", adminURL, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "strata_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("testenv: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			tb.Logf("testenv: drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Logf("testenv: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(adminURL)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + strings.TrimPrefix(name, "/")
	return u.String()
}

// RunMain runs a TestMain body and exits with its code.
func RunMain(m *testing.M, run func(*testing.M) int) { os.Exit(run(m)) }

// WithLeakCheck wraps a TestMain body: when the tests pass, no goroutine may be left running
// (go.uber.org/goleak), beyond the ignored ones named and IdleHTTPConnections.
func WithLeakCheck(run func(*testing.M) int, ignore ...goleak.Option) func(*testing.M) int {
	return func(m *testing.M) int {
		code := run(m)
		if code != 0 {
			return code
		}
		if err := goleak.Find(append(IdleHTTPConnections(), ignore...)...); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: goroutines left running after the tests:", err)
			return 1
		}
		return 0
	}
}

// IdleHTTPConnections are the goleak options that ignore the idle keep-alive connections of an
// HTTP client's transport (an object store's client, which lives as long as the process): a
// connection's read loop waiting for the server's next bytes and its write loop. A connection
// whose response body was never closed is still reported (its read loop waits for the body, not
// in a read).
func IdleHTTPConnections() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).Read"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	}
}
