package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	strata "github.com/strata-store/strata/client"
	"github.com/strata-store/strata/internal/testenv"
)

// strataBinary builds the strata binary once per test process.
var strataBinary struct {
	once sync.Once
	path string
	err  error
}

func buildStrata(t testing.TB) string {
	t.Helper()
	strataBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "strata-test-bin-")
		if err != nil {
			strataBinary.err = err
			return
		}
		strataBinary.path = filepath.Join(dir, "strata")
		build := exec.Command("go", "build", "-o", strataBinary.path, ".")
		build.Stderr = os.Stderr
		strataBinary.err = build.Run()
	})
	if strataBinary.err != nil {
		t.Fatal(strataBinary.err)
	}
	return strataBinary.path
}

// clusterProcess is one `strata` process of the cluster, in a working directory of its own.
type clusterProcess struct {
	t    testing.TB
	args []string
	env  []string
	dir  string
	cmd  *exec.Cmd
	log  lockedBuffer // stderr of every run, shown when the test fails
}

func (p *clusterProcess) start() {
	p.t.Helper()
	p.cmd = exec.Command(buildStrata(p.t), p.args...)
	p.cmd.Dir = p.dir
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stderr = &p.log
	require.NoError(p.t, p.cmd.Start())
	p.t.Cleanup(func() {
		if p.t.Failed() {
			p.t.Logf("strata %v (%s):\n%s", p.args, p.dir, p.log.String())
		}
	})
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and the test's reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (p *clusterProcess) kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
}

func (p *clusterProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _, _ = p.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.kill9()
		<-done
	}
}

func waitHealthy(t testing.TB, base string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/api/v1/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "%s never became healthy", base)
}

// A cluster whose processes share only an object store, PostgreSQL and Temporal — once on each
// object store (S3 on versitygw, Azure Blob on Azurite, GCS on fake-gcs-server): two API workers
// and a maintenance worker, each in an empty working directory of its own. Appends go through
// both API workers, a merge on the maintenance worker (asked for by the API workers' seals) folds
// them, reads go through the other worker; then one API worker is killed (-9) and restarted with
// its instance id: every acknowledged row is readable exactly once with its newest value, through
// both.
func TestAClusterThatSharesNoDiskLosesNothing(t *testing.T) {
	temporalAddr := os.Getenv("STRATA_TEST_TEMPORAL_ADDRESS")
	if temporalAddr == "" {
		t.Skip("STRATA_TEST_TEMPORAL_ADDRESS is not set (make test starts the Temporal dev server and sets it)")
	}
	for kind, place := range map[string]func(testing.TB) string{"s3": testenv.S3, "azure": testenv.Azure, "gcs": testenv.GCS} {
		t.Run(kind, func(t *testing.T) { testAClusterThatSharesNoDisk(t, temporalAddr, place(t)) }) // skips without the service
	}
}

func testAClusterThatSharesNoDisk(t *testing.T, temporalAddr, dataURL string) {
	ctx := context.Background()
	db := testenv.Database(t)
	namespace := fmt.Sprintf("strata-cluster-%d", time.Now().UnixNano())
	nc, err := client.NewNamespaceClient(client.Options{HostPort: temporalAddr})
	require.NoError(t, err)
	require.NoError(t, nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}))
	nc.Close()

	common := []string{"STRATA_DATABASE_URL=" + db, "STRATA_DATA_URL=" + dataURL, "STRATA_TEMPORAL_ADDRESS=" + temporalAddr,
		"STRATA_TEMPORAL_NAMESPACE=" + namespace, "STRATA_LOG_LEVEL=warn", "STRATA_FLUSH_INTERVAL=500ms"}
	api := func(instance string) (*clusterProcess, string) {
		port, err := testenv.FreePort()
		require.NoError(t, err)
		p := &clusterProcess{t: t, args: []string{"serve"}, dir: t.TempDir(),
			env: append(append([]string{}, common...), "STRATA_INSTANCE_ID="+instance, fmt.Sprintf("STRATA_LISTEN_ADDR=127.0.0.1:%d", port),
				"STRATA_MERGE_AFTER_GENERATIONS=1")}
		p.start()
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		waitHealthy(t, base)
		return p, base
	}
	api1, base1 := api("api-1")
	defer func() { api1.stop() }()
	api2, base2 := api("api-2")
	defer api2.stop()
	metricsPort, err := testenv.FreePort()
	require.NoError(t, err)
	maint := &clusterProcess{t: t, args: []string{"worker"}, dir: t.TempDir(),
		env: append(append([]string{}, common...), "STRATA_INSTANCE_ID=maint", "STRATA_SWEEP_INTERVAL=0", // no schedules: merges follow seals
			fmt.Sprintf("STRATA_METRICS_ADDR=127.0.0.1:%d", metricsPort))}
	maint.start()
	defer maint.stop()

	c1, err := strata.New(base1)
	require.NoError(t, err)
	c2, err := strata.New(base2)
	require.NoError(t, err)
	_, _, err = c1.CreateStore(ctx, strata.KindRollout, "cluster", strata.CreateOptions{})
	require.NoError(t, err)

	want := map[string]string{} // id -> newest acknowledged content
	appendRows := func(c *strata.Client, round int, ids ...string) {
		rows := make([]json.RawMessage, len(ids))
		for i, id := range ids {
			content := fmt.Sprintf("round %d", round)
			rows[i] = json.RawMessage(fmt.Sprintf(`{"id": %q, "rollout_id": "r", "content": %q}`, id, content))
			want[id] = content
		}
		_, err := c.Append(ctx, strata.KindRollout, "cluster", rows, false)
		require.NoError(t, err)
	}
	ids := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%03d", prefix, i)
		}
		return out
	}
	for round := range 3 {
		appendRows(c1, round, ids("one", 50)...)
		appendRows(c2, round, ids("two", 50)...)
	}
	appendRows(c2, 3, ids("one", 10)...) // newer values of api-1's ids, through api-2

	checkAll := func(c *strata.Client, who string) {
		t.Helper()
		require.Eventually(t, func() bool {
			for id, content := range want {
				row, err := c.Get(ctx, strata.KindRollout, "cluster", id)
				if err != nil || row == nil {
					return false
				}
				var got struct{ Content string }
				if json.Unmarshal(row, &got) != nil || got.Content != content {
					return false
				}
			}
			return true
		}, 60*time.Second, 250*time.Millisecond, "every acknowledged row, newest value, through %s", who)
		n := 0
		require.NoError(t, c.Scan(ctx, strata.KindRollout, "cluster", strata.ScanOptions{}, func(json.RawMessage) error { n++; return nil }))
		require.Equal(t, len(want), n, "each row exactly once through %s", who)
	}
	checkAll(c1, "api-1")
	checkAll(c2, "api-2")
	// The maintenance worker (another process, reached through Temporal) folds the sealed rows
	// into the base table: the API workers ask for a merge as soon as a seal leaves one
	// generation pending.
	require.Eventually(t, func() bool {
		st, err := c2.GetStore(ctx, strata.KindRollout, "cluster")
		return err == nil && st.Version != nil && *st.Version > 1
	}, 90*time.Second, 500*time.Millisecond, "the maintenance worker merged the WAL")

	// Maintenance from the command line goes through an API worker to the store's workflow:
	// --wait prints what the run did; a store that does not exist fails at once.
	maintCLI := func(args ...string) (string, error) {
		cmd := exec.Command(buildStrata(t), append([]string{"maint", "--api-url", base2}, args...)...)
		cmd.Env = append(os.Environ(), "STRATA_ADMIN_TOKEN=", "STRATA_API_TOKEN=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := maintCLI("--wait", "stats", "rollout/cluster")
	require.NoError(t, err, out)
	require.Contains(t, out, "stats_refresh on rollout/cluster done (workflow store/rollout/cluster): table_version=")
	out, err = maintCLI("merge", "rollout/no-such-store")
	require.Error(t, err, out)
	require.Contains(t, out, "no-such-store")
	require.Contains(t, out, "NOT_FOUND")
	// The compact route runs in the store's workflow too (the maintenance worker serves it).
	var compacted struct {
		FragmentsRemoved int `json:"fragments_removed"`
	}
	resp, err := http.Post(base2+"/api/v1/rollouts/cluster/compact", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&compacted))
	resp.Body.Close()
	tc, err := client.Dial(client.Options{HostPort: temporalAddr, Namespace: namespace, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer tc.Close()
	compactRan := false
	for it := tc.GetWorkflowHistory(ctx, "store/rollout/cluster", "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "Compact" {
			compactRan = true
		}
	}
	require.True(t, compactRan, "the compaction ran as an activity of the store's workflow")

	// Unsealed rows on api-1, then kill -9 and a restart with the same instance id.
	api1.kill9()
	api1, base1 = api("api-1")
	c1, err = strata.New(base1)
	require.NoError(t, err)
	appendRows(c1, 4, ids("one", 5)...)
	appendRows(c1, 4, "after-restart")
	api1.kill9() // acknowledged, maybe not sealed yet
	api1, base1 = api("api-1")
	c1, err = strata.New(base1)
	require.NoError(t, err)
	checkAll(c1, "api-1 after two crashes")
	checkAll(c2, "api-2")
}
