package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runScript(t *testing.T, env []string, script string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(RepoRoot(), "scripts", script), args...)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// pg.sh: start is idempotent (a second start reuses the running server), stop stops it.
func TestPgScriptIsIdempotent(t *testing.T) {
	dir, err := os.MkdirTemp("", "strata-pgscript-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"STRATA_PG_DIR=" + filepath.Join(dir, "pg"), fmt.Sprintf("STRATA_PG_PORT=%d", port)}
	out, err := runScript(t, env, "pg.sh", "start")
	if err != nil || !strings.Contains(out, "PostgreSQL up") {
		t.Fatalf("first start: %v\n%s", err, out)
	}
	defer runScript(t, env, "pg.sh", "stop") //nolint:errcheck
	out, err = runScript(t, env, "pg.sh", "start")
	if err != nil || !strings.Contains(out, "reusing") {
		t.Fatalf("second start should reuse: %v\n%s", err, out)
	}
	if out, err := runScript(t, env, "pg.sh", "status"); err != nil || !strings.HasPrefix(out, "up ") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if out, err := runScript(t, env, "pg.sh", "stop"); err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	if _, err := runScript(t, env, "pg.sh", "status"); err == nil {
		t.Fatal("status after stop should fail")
	}
}

// temporal.sh refuses, with a clear message, a port held by something that is not Temporal.
func TestTemporalScriptFailsClearlyOnABusyPort(t *testing.T) {
	if _, err := os.Stat(filepath.Join(RepoRoot(), "bin", "temporal")); err != nil {
		t.Skip("bin/temporal is not installed (make tools)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	out, err := runScript(t, []string{fmt.Sprintf("STRATA_TEMPORAL_PORT=%d", port), "STRATA_TEMPORAL_DB=" + filepath.Join(t.TempDir(), "t.db")},
		"temporal.sh", "start")
	if err == nil {
		t.Fatalf("start on a busy port succeeded:\n%s", out)
	}
	if !strings.Contains(out, "is taken by something that is not a healthy Temporal server") {
		t.Fatalf("unclear failure:\n%s", out)
	}
}
