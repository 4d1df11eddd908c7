package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

// commandsOf lists cmd and every command below it.
func commandsOf(cmd *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{cmd}
	for _, c := range cmd.Commands() {
		out = append(out, commandsOf(c)...)
	}
	return out
}

// parseOnly parses args as the CLI would (flags anywhere, then the environment) without running
// the command, and returns the command they name.
func parseOnly(t *testing.T, root *cobra.Command, args ...string) *cobra.Command {
	t.Helper()
	cmd, rest, err := root.Find(args)
	require.NoError(t, err)
	require.NoError(t, cmd.ParseFlags(rest))
	require.NoError(t, applyEnv(cmd))
	return cmd
}

// Every flag of every command is settable through its STRATA_* variable.
func TestEveryFlagIsSettableFromTheEnvironment(t *testing.T) {
	for _, sub := range commandsOf(rootCommand())[1:] {
		path := strings.Fields(strings.TrimPrefix(sub.CommandPath(), "strata "))
		sub.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			env := envName(f.Name)
			t.Run(strings.Join(path, "/")+"/"+f.Name, func(t *testing.T) {
				want := sampleValue(f)
				t.Setenv(env, want)
				got := parseOnly(t, rootCommand(), path...).Flags().Lookup(f.Name).Value.String()
				require.Equal(t, want, got, "%s did not set --%s", env, f.Name)
			})
		})
	}
}

func TestCommandLineWinsOverTheEnvironment(t *testing.T) {
	t.Setenv("STRATA_LISTEN_ADDR", "127.0.0.1:1")
	cmd := parseOnly(t, rootCommand(), "serve", "--listen-addr", "127.0.0.1:2")
	require.Equal(t, "127.0.0.1:2", cmd.Flags().Lookup("listen-addr").Value.String())
}

// Flags go anywhere on the line; unknown commands and flags say what to do.
func TestFlagsAfterArgumentsAndHelpfulErrors(t *testing.T) {
	cmd := parseOnly(t, rootCommand(), "scan", "rollout/tour", "--limit", "5", "--format=table")
	require.Equal(t, "5", cmd.Flags().Lookup("limit").Value.String())
	require.Equal(t, []string{"rollout/tour"}, cmd.Flags().Args())
	err := run(context.Background(), []string{"scna"})
	require.ErrorContains(t, err, "unknown command")
	require.Contains(t, describe(err), "hint:")
	err = run(context.Background(), []string{"scan", "--nope", "rollout/x"})
	require.ErrorContains(t, err, "unknown flag: --nope")
	require.ErrorContains(t, err, "strata scan --help")
	// Hints follow the error's type: an API answer's status, a refused connection.
	c, err := client.New("http://127.0.0.1:1")
	require.NoError(t, err)
	_, err = c.GetStore(context.Background(), client.KindRollout, "x")
	require.Error(t, err)
	require.Contains(t, describe(err), "is a Strata server running")
	notFound := fmt.Errorf("reading: %w", &client.Error{Status: 404, Code: "NOT_FOUND", Message: `rollout store "x" not found`})
	msg := describe(notFound)
	require.True(t, strings.HasPrefix(msg, "reading: 404 NOT_FOUND"), "one prefix: %s", msg)
	require.Contains(t, msg, "strata store list")
	require.Contains(t, describe(&client.Error{Status: 401, Code: "UNAUTHORIZED"}), "--api-token")
	require.NotContains(t, describe(errors.New("a row whose text says 404 NOT_FOUND")), "hint:", "text alone is not an answer")
}

func sampleValue(f *pflag.Flag) string {
	switch f.Value.(type) {
	case interface{ IsBoolFlag() bool }:
		if f.DefValue == "true" {
			return "false"
		}
		return "true"
	}
	if _, err := strconv.ParseInt(f.DefValue, 10, 64); err == nil {
		return "17"
	}
	if _, err := time.ParseDuration(f.DefValue); err == nil {
		return "17s"
	}
	switch f.Name {
	case "log-level":
		return "debug"
	case "log-format":
		return "json"
	}
	return "value-for-" + f.Name
}

func TestServeAnswersHealthAndStopsOnCancel(t *testing.T) {
	port, err := testenv.FreePort()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveConfig{
			ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), DatabaseURL: testenv.Database(t), DataURL: t.TempDir(),
			StoreCacheCapacity: 10, FlushInterval: time.Second,
			LogLevel: "warn", LogFormat: "text", ShutdownTimeout: 5 * time.Second,
		})
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d/api/v1/health", port)
	var resp *http.Response
	require.Eventually(t, func() bool {
		if resp, err = http.Get(url); err != nil {
			return false
		}
		if resp.StatusCode != http.StatusOK { // starting: the catalog is being opened
			resp.Body.Close()
			return false
		}
		return true
	}, 20*time.Second, 50*time.Millisecond)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "ok", body["catalog"])
	require.Equal(t, "ok", body["storage"])

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
}

func TestServeFailsClearlyWithABadLogLevel(t *testing.T) {
	err := serve(context.Background(), serveConfig{LogLevel: "loud", LogFormat: "text"})
	require.ErrorContains(t, err, "--log-level")
}

func TestParseMaintArgs(t *testing.T) {
	store, req, err := parseMaintArgs([]string{"merge", "rollout/exp-1"})
	require.NoError(t, err)
	require.Equal(t, "store/rollout/exp-1", store.WorkflowID())
	require.EqualValues(t, "merge_wal", req.Op)
	for _, bad := range [][]string{{"merge"}, {"defrag", "rollout/x"}, {"merge", "rollout"}, {"merge", "table/x"}, {"merge", "rollout/../x"}} {
		_, _, err := parseMaintArgs(bad)
		require.Error(t, err, "%v", bad)
	}
}

// `strata worker --metrics-addr` serves Prometheus metrics and a health route.
func TestWorkerServesMetricsAndHealth(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt, err := openRuntime(context.Background(), serveConfig{DatabaseURL: testenv.Database(t), DataURL: t.TempDir(),
		StoreCacheCapacity: 10, MergeMemoryBytes: 1 << 20}, log)
	require.NoError(t, err)
	defer rt.close(context.Background())
	port, err := testenv.FreePort()
	require.NoError(t, err)
	stop, err := serveMetrics(fmt.Sprintf("127.0.0.1:%d", port), rt, log)
	require.NoError(t, err)
	defer stop()
	get := func(path string) (int, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	status, body := get("/metrics")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "strata_merge_budget_reserved_bytes")
	require.Contains(t, body, `strata_build_info{goversion="go`, "the build is named on /metrics")
	status, body = get("/api/v1/health")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `"catalog":"ok"`)
	_, err = serveMetrics(fmt.Sprintf("127.0.0.1:%d", port), rt, log)
	require.Error(t, err, "a busy --metrics-addr fails clearly")
}

// A runtime's memory governor sets the soft memory limit from its budgets while it runs, exports
// it, and puts back the limit the process started with when the runtime closes.
func TestTheRuntimesMemoryGovernorSetsTheSoftLimitUntilItCloses(t *testing.T) {
	start := debug.SetMemoryLimit(-1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt, err := openRuntime(context.Background(), serveConfig{DatabaseURL: testenv.Database(t), DataURL: t.TempDir(),
		StoreCacheCapacity: 10, MergeMemoryBytes: 1 << 20, GCHeadroomBytes: 64 << 20}, log)
	require.NoError(t, err)
	limit := debug.SetMemoryLimit(-1)
	require.Less(t, limit, start, "the governor set a limit")
	require.GreaterOrEqual(t, limit, int64(64<<20), "budgets in use plus the headroom")
	families, err := rt.registry.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	require.True(t, names["strata_memory_soft_limit_bytes"])
	rt.close(context.Background())
	require.Equal(t, start, debug.SetMemoryLimit(-1))
}

func TestMemoryBoundsFollowTheGoMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	debug.SetMemoryLimit(math.MaxInt64) // none set
	require.EqualValues(t, 1<<30, memtableLimit(0))
	require.EqualValues(t, 256<<20, cacheLimit(0))
	debug.SetMemoryLimit(4 << 30)
	require.EqualValues(t, 1<<30, memtableLimit(0))
	require.EqualValues(t, 512<<20, cacheLimit(0))
	require.EqualValues(t, 0, memtableLimit(-1), "negative: unlimited")
	require.EqualValues(t, 123<<20, memtableLimit(123<<20))
	require.EqualValues(t, 1<<20, cacheLimit(5), "at least 1 MiB")
}

// `strata serve` and `strata worker` on one host both default to the host name as instance id.
// The worker's runtime opens stores read-only: its merges never claim the write shard the API
// worker appends to, so appends keep succeeding across merges.
func TestServeAndWorkerWithOneInstanceIDDoNotFenceEachOther(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	db, dir := testenv.Database(t), t.TempDir()
	serveRT, err := openRuntime(ctx, serveConfig{DatabaseURL: db, DataURL: dir, InstanceID: "host-a",
		StoreCacheCapacity: 10, MergeMemoryBytes: 1 << 20}, log)
	require.NoError(t, err)
	defer serveRT.close(ctx)
	workerCfg := workerCommandConfig()
	workerCfg.DatabaseURL, workerCfg.DataURL, workerCfg.InstanceID = db, dir, "host-a"
	workerCfg.StoreCacheCapacity, workerCfg.MergeMemoryBytes = 10, 1<<20
	workerRT, err := openRuntime(ctx, workerCfg, log)
	require.NoError(t, err)
	defer workerRT.close(ctx)

	_, _, err = serveRT.stores.Create(ctx, catalog.KindRollout, "shared", nil, nil)
	require.NoError(t, err)
	for round := range 3 {
		s, release, err := serveRT.stores.Acquire(ctx, catalog.KindRollout, "shared")
		require.NoError(t, err)
		rec := kinds.MinimalRolloutBatch(memory.DefaultAllocator, fmt.Sprintf("r%d", round))
		_, err = s.Append(ctx, rec)
		rec.Release()
		require.NoError(t, err, "round %d: the API worker's append", round)
		require.NoError(t, s.Flush(ctx))
		shard := s.Shard()
		release()

		m, release, err := workerRT.stores.Acquire(ctx, catalog.KindRollout, "shared")
		require.NoError(t, err)
		res, err := m.MergeShard(ctx, shard, lsm.MergeOptions{})
		release()
		require.NoError(t, err)
		require.Equal(t, 1, res.Generations)
	}
}

// `strata status` shows each store's garbage and last cleanup, and `--failing` what fails, how
// and since when.
func TestStatusShowsGarbageAndFailures(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cleaned := now.Add(-90 * time.Second)
	var out strings.Builder
	require.NoError(t, printStatus(&out, []catalog.StoreStatus{
		{Kind: catalog.KindRollout, Name: "a", Stats: &catalog.StoreStats{TableVersion: 7, Fragments: 2, IndexCoveredFragments: 2,
			DroppedBytes: 3 << 20, CleanedDroppedBytes: 1 << 20, LastCleanupAt: &cleaned, UpdatedAt: now}},
		{Kind: catalog.KindRollout, Name: "b"},
	}, now))
	require.Contains(t, out.String(), "GARBAGE")
	require.Contains(t, out.String(), "2.0 MiB")
	require.Contains(t, out.String(), "1m30s ago")
	require.Contains(t, out.String(), "never observed")
	out.Reset()
	require.NoError(t, printFailures(&out, []catalog.MaintenanceFailure{{Kind: catalog.KindRollout, Name: "a", Op: "merge_wal",
		ErrorType: "ObjectStoreUnavailable", Message: "merge_wal rollout/a: disk full:\nno space", Since: now.Add(-time.Hour), Failures: 3}}, now))
	require.Regexp(t, `rollout/a +merge_wal +ObjectStoreUnavailable +1h0m0s ago +3 `, out.String())
	require.Contains(t, out.String(), "disk full: no space", "one line per failure")
	out.Reset()
	require.NoError(t, printFailures(&out, nil, now))
	require.Contains(t, out.String(), "(no failing maintenance)")
}
