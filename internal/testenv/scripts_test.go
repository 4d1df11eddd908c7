package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-store/strata/storage/objstore"
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

// run.sh (make run): starts PostgreSQL, Temporal and `strata dev`, serves, and on Ctrl-C (SIGINT
// to its process group) stops everything it started; a busy API port fails clearly at once.
func TestRunScriptStartsAndStopsTheStack(t *testing.T) { testRunScript(t, "") }

// `make run S3=1`: the same stack with a local S3 server, which holds the stores.
func TestRunScriptWithS3KeepsStoresInTheBucket(t *testing.T) {
	if _, err := os.Stat(filepath.Join(RepoRoot(), "bin", "versitygw")); err != nil {
		t.Skip("bin/versitygw is not installed (make tools)")
	}
	testRunScript(t, "s3")
}

// `make run AZURE=1`: the same with Azurite, whose container run.sh creates.
func TestRunScriptWithAzureKeepsStoresInTheContainer(t *testing.T) {
	if _, err := os.Stat(AzuriteBin()); err != nil {
		t.Skip("Azurite is not installed (make tools)")
	}
	testRunScript(t, "azure")
}

// `make run GCS=1`: the same with fake-gcs-server, whose bucket run.sh creates.
func TestRunScriptWithGCSKeepsStoresInTheBucket(t *testing.T) {
	if _, err := os.Stat(FakeGCSBin()); err != nil {
		t.Skip("bin/fake-gcs-server is not installed (make tools)")
	}
	testRunScript(t, "gcs")
}

// runScriptStores is what each object store of run.sh needs: its make variable, its script, its
// settings (on the port given), and the store URL run.sh announces.
var runScriptStores = map[string]struct {
	variable, script, url string
	env                   func(dir string, port int) []string
}{
	"s3": {"S3", "s3", "s3://strata", func(dir string, port int) []string {
		return []string{fmt.Sprintf("STRATA_S3_PORT=%d", port), "STRATA_S3_DIR=" + filepath.Join(dir, "s3"),
			"STRATA_S3_BUCKET=strata", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY="}
	}},
	"azure": {"AZURE", "azurite", "az://strata", func(dir string, port int) []string {
		return []string{fmt.Sprintf("STRATA_AZURITE_PORT=%d", port), "STRATA_AZURITE_DIR=" + filepath.Join(dir, "azurite"),
			"STRATA_AZURITE_CONTAINER=strata", "STRATA_AZURITE_IN_MEMORY=", "AZURE_STORAGE_CONNECTION_STRING="}
	}},
	"gcs": {"GCS", "fake-gcs", "gs://strata", func(dir string, port int) []string {
		return []string{fmt.Sprintf("STRATA_GCS_PORT=%d", port), "STRATA_GCS_DIR=" + filepath.Join(dir, "gcs"),
			"STRATA_GCS_BUCKET=strata", "STRATA_GCS_BACKEND=", "STORAGE_EMULATOR_HOST="}
	}},
}

func testRunScript(t *testing.T, store string) {
	for _, b := range []string{"temporal", "strata"} {
		if _, err := os.Stat(filepath.Join(RepoRoot(), "bin", b)); err != nil {
			t.Skipf("bin/%s is not built (make build tools)", b)
		}
	}
	dir, err := os.MkdirTemp("", "strata-runscript-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"STRATA_PG_DIR=" + filepath.Join(dir, "pg"), fmt.Sprintf("STRATA_PG_PORT=%d", ports[0]),
		fmt.Sprintf("STRATA_TEMPORAL_PORT=%d", ports[1]), fmt.Sprintf("STRATA_TEMPORAL_UI_PORT=%d", ports[2]),
		"STRATA_TEMPORAL_DB=" + filepath.Join(dir, "temporal.db"), fmt.Sprintf("STRATA_LISTEN_ADDR=127.0.0.1:%d", ports[3]),
		"STRATA_DATA_URL=file://" + filepath.Join(dir, "stores"), "STRATA_DATABASE_URL=", "STRATA_TEMPORAL_ADDRESS=",
		"S3=", "AZURE=", "GCS="}
	objects, remote := runScriptStores[store]
	if remote {
		env[6] = "STRATA_DATA_URL=" // run.sh points it at the bucket
		env = append(append(env, objects.variable+"=1"), objects.env(dir, ports[4])...)
	}

	busy, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", ports[3]))
	if err != nil {
		t.Fatal(err)
	}
	out, err := runScript(t, env, "run.sh")
	busy.Close()
	if err == nil || !strings.Contains(out, "already in use") {
		t.Fatalf("a busy API port must fail clearly: %v\n%s", err, out)
	}

	cmd := exec.Command(filepath.Join(RepoRoot(), "scripts", "run.sh"))
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), env...)
	var buf syncBuffer // the stack's output, read while it runs
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	health := fmt.Sprintf("http://127.0.0.1:%d/api/v1/health", ports[3])
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stack did not come up:\n%s", buf.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if remote {
		base := fmt.Sprintf("http://127.0.0.1:%d", ports[3])
		resp, err := http.Post(base+"/api/v1/rollouts", "application/json", strings.NewReader(`{"name": "in-bucket"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("create: %d\n%s", resp.StatusCode, buf.String())
		}
		if !strings.Contains(buf.String(), "stores live in "+objects.url) {
			t.Errorf("run.sh did not say where stores live:\n%s", buf.String())
		}
		if !runScriptStoreIsThere(t, store, dir, ports[4]) {
			t.Fatalf("the store is not in the %s bucket:\n%s", store, buf.String())
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("run.sh did not stop after Ctrl-C:\n%s", buf.String())
	}
	stopped := []int{ports[0], ports[1], ports[3]}
	want := "stopped strata and pg temporal"
	if remote {
		stopped, want = append(stopped, ports[4]), want+" "+objects.script
	}
	for _, p := range stopped {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still answers after Ctrl-C:\n%s", p, buf.String())
		}
	}
	if !strings.Contains(buf.String(), want) {
		t.Errorf("run.sh did not report what it stopped:\n%s", buf.String())
	}
}

// runScriptStoreIsThere reports whether the store "rollout/in-bucket" the test created is in the
// emulator's bucket or container "strata" (on port), looked at without Strata.
func runScriptStoreIsThere(t *testing.T, store, dir string, port int) bool {
	switch store {
	case "s3": // versitygw keeps a bucket as a directory
		matches, _ := filepath.Glob(filepath.Join(dir, "s3", "strata", "rollout", "in-bucket.*"))
		return len(matches) > 0
	case "azure":
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", AzuriteConnectionString(port))
		s, err := objstore.Open(context.Background(), "az://strata")
		if err != nil {
			t.Fatal(err)
		}
		dirs, err := s.(objstore.DirLister).ListDirs(context.Background(), "rollout")
		if err != nil {
			t.Fatal(err)
		}
		return len(dirs) == 1 && strings.HasPrefix(dirs[0], "in-bucket.")
	}
	// The GCS JSON API's object listing.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/storage/v1/b/strata/o?prefix=rollout/in-bucket.", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listing struct{ Items []struct{ Name string } }
	if err := json.NewDecoder(resp.Body).Decode(&listing); err != nil {
		t.Fatal(err)
	}
	return len(listing.Items) > 0
}

// pg.sh works wherever the repository is cloned: from a parent directory only its owner may
// traverse (a clone under /root, mode 0700), as root (the cluster's user, postgres, cannot reach
// it: the cluster moves where it can and the data directory becomes a link) and as anyone else.
func TestPgScriptStartsUnderAPrivateParent(t *testing.T) {
	parent, err := os.MkdirTemp("", "strata-private-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(parent)
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "clone", ".data", "pg")
	env := []string{"STRATA_PG_DIR=" + dir, fmt.Sprintf("STRATA_PG_PORT=%d", port)}
	out, err := runScript(t, env, "pg.sh", "start")
	if err != nil || !strings.Contains(out, "PostgreSQL up") {
		t.Fatalf("start under a 0700 parent: %v\n%s", err, out)
	}
	real, _ := filepath.EvalSymlinks(dir)
	defer os.RemoveAll(real)
	defer runScript(t, env, "pg.sh", "stop") //nolint:errcheck
	if out, err := runScript(t, env, "pg.sh", "status"); err != nil || !strings.HasPrefix(out, "up ") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	// A second start (a later `make run`) finds the same cluster.
	if out, err := runScript(t, env, "pg.sh", "stop"); err != nil || !strings.Contains(out, "stopped") {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	if out, err := runScript(t, env, "pg.sh", "start"); err != nil || !strings.Contains(out, "PostgreSQL up") {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(real, "PG_VERSION")); err != nil {
		t.Fatalf("the cluster is not where the data directory leads: %v", err)
	}
}

// The same as a user other than root (nobody, when the tests run as root and the repository is
// readable by it): the cluster runs as that user, in place.
func TestPgScriptStartsUnderAPrivateParentAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs as the invoking user in TestPgScriptStartsUnderAPrivateParent")
	}
	script := filepath.Join(RepoRoot(), "scripts", "pg.sh")
	if exec.Command("runuser", "-u", "nobody", "--", "test", "-x", script).Run() != nil {
		t.Skip("the repository is not readable by nobody")
	}
	parent, err := os.MkdirTemp("", "strata-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(parent)
	if err := exec.Command("chown", "nobody", parent).Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	run := func(arg string) (string, error) {
		cmd := exec.Command("runuser", "-u", "nobody", "--", "env", "STRATA_PG_DIR="+filepath.Join(parent, "clone", ".data", "pg"),
			fmt.Sprintf("STRATA_PG_PORT=%d", port), script, arg)
		cmd.Dir = parent
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("start")
	if err != nil || !strings.Contains(out, "PostgreSQL up") {
		t.Fatalf("start as nobody: %v\n%s", err, out)
	}
	defer run("stop") //nolint:errcheck
	if out, err := run("status"); err != nil || !strings.HasPrefix(out, "up ") {
		t.Fatalf("status: %v\n%s", err, out)
	}
}

// s3.sh starts versitygw with a bucket, reuses it on a second start, answers objects over the
// S3 API at the URL it prints, and stops only what it started.
func TestS3ScriptStartsReusesAndStops(t *testing.T) {
	if _, err := os.Stat(filepath.Join(RepoRoot(), "bin", "versitygw")); err != nil {
		t.Skip("bin/versitygw is not installed (make tools)")
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{fmt.Sprintf("STRATA_S3_PORT=%d", port), "STRATA_S3_DIR=" + filepath.Join(t.TempDir(), "s3"), "STRATA_S3_BUCKET=b"}
	defer func() { _, _ = runScript(t, env, "s3.sh", "stop") }()
	for i, want := range []string{"versitygw up on", "reusing versitygw"} {
		out, err := runScript(t, env, "s3.sh", "start")
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("start #%d: %v\n%s", i+1, err, out)
		}
	}
	url, err := runScript(t, env, "s3.sh", "url")
	if err != nil || !strings.HasPrefix(url, "s3://b?endpoint=http://127.0.0.1:") {
		t.Fatalf("url: %v %q", err, url)
	}
	out, err := runScript(t, env, "s3.sh", "stop")
	if err != nil || !strings.Contains(out, "stopped versitygw") {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	if out, err := runScript(t, env, "s3.sh", "status"); err == nil {
		t.Fatalf("status after stop: %s", out)
	}
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
