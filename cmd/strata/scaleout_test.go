package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	strata "github.com/strata-store/strata/client"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
)

// startServeCluster starts n `strata serve` processes sharing db and dataURL (no Temporal: a
// port nothing listens on), each with its own instance id and advertised URL, and returns their
// base URLs once every one is healthy.
func startServeCluster(t testing.TB, n int, db, dataURL string, extraEnv ...string) []string {
	t.Helper()
	bases, _ := startServeProcesses(t, n, db, dataURL, extraEnv...)
	return bases
}

// roundRobin is a load balancer's client: each request goes to the next worker, and a store's
// appends follow its route — asked of the next worker before its first append, then the
// Strata-Preferred-Workers header of each append answer — as the Go client's Routed does.
type roundRobin struct {
	bases []string
	mu    sync.Mutex // guards next and preferred
	next  int
	// preferred: a store's preferred worker.
	preferred map[string]string
}

func (r *roundRobin) nextBase() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bases[r.next%len(r.bases)]
	r.next++
	return b
}

func (r *roundRobin) pick(ctx context.Context, store string) (string, error) {
	r.mu.Lock()
	p, ok := r.preferred[store]
	r.mu.Unlock()
	if ok {
		return p, nil
	}
	c, err := strata.New(r.nextBase())
	if err != nil {
		return "", err
	}
	route, err := c.Route(ctx, strata.KindRollout, store)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.preferred[store] = route.Workers[0].URL
	return route.Workers[0].URL, nil
}

// appendRows posts rows to store through the worker the client picks.
func (r *roundRobin) appendRows(ctx context.Context, store string, rows []string) error {
	body := `{"records": [` + strings.Join(rows, ",") + `]}`
	base, err := r.pick(ctx, store)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/rollouts/"+store+"/records", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("append to %s: %s", store, resp.Status)
	}
	if h := resp.Header.Get("Strata-Preferred-Workers"); h != "" {
		r.mu.Lock()
		r.preferred[store] = strings.TrimSpace(strings.Split(h, ",")[0])
		r.mu.Unlock()
	}
	return nil
}

// Eight `strata serve` processes on one object store (S3 on versitygw) behind a round-robin
// client that follows routes: appends from 16 writers to 6 stores are all acknowledged and all
// readable through every worker, and each store has at most route-fanout + 1 write shards,
// before and after a merge (here one: every worker agrees on the live set before the appends).
func TestAnEightWorkerClusterBehindARoundRobinClient(t *testing.T) {
	dataURL := testenv.S3(t) // skips without the S3 test service
	const workers, stores, writers, batches, perBatch = 8, 6, 16, 6, 25
	bases := startServeCluster(t, workers, testenv.Database(t), dataURL, "STRATA_FLUSH_INTERVAL=1s", "STRATA_HEARTBEAT_INTERVAL=200ms")
	ctx := context.Background()
	c0, err := strata.New(bases[0])
	require.NoError(t, err)
	_, _, err = c0.CreateStore(ctx, strata.KindRollout, "probe", strata.CreateOptions{})
	require.NoError(t, err)
	// Every worker sees the others before the first append (routing answers agree).
	require.Eventually(t, func() bool {
		for _, b := range bases {
			c, _ := strata.New(b)
			r, err := c.Route(ctx, strata.KindRollout, "probe")
			if err != nil || r.LiveWorkers != workers {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "every worker sees all %d", workers)
	names := make([]string, stores)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%d", i)
		_, _, err := c0.CreateStore(ctx, strata.KindRollout, names[i], strata.CreateOptions{})
		require.NoError(t, err)
	}
	rr := &roundRobin{bases: bases, preferred: map[string]string{}}
	var mu sync.Mutex
	acked := map[string]map[string]bool{} // store -> ids acknowledged
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				store := names[(w+b)%stores]
				var rows, ids []string
				for i := range perBatch {
					id := fmt.Sprintf("w%02d-b%02d-%02d", w, b, i)
					ids = append(ids, id)
					rows = append(rows, fmt.Sprintf(`{"id": %q, "rollout_id": "r", "content": "x"}`, id))
				}
				if err := rr.appendRows(ctx, store, rows); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if acked[store] == nil {
					acked[store] = map[string]bool{}
				}
				for _, id := range ids {
					acked[store][id] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Sealed on every worker (the flush sweeper, within a second), every acked row is read
	// through every worker, once.
	for _, b := range bases {
		c, err := strata.New(b)
		require.NoError(t, err)
		for _, store := range names {
			require.Eventually(t, func() bool {
				seen := map[string]bool{}
				err := c.Scan(ctx, strata.KindRollout, store, strata.ScanOptions{}, func(row json.RawMessage) error {
					var r struct{ ID string }
					if err := json.Unmarshal(row, &r); err != nil {
						return err
					}
					seen[r.ID] = true
					return nil
				})
				return err == nil && len(seen) == len(acked[store])
			}, 30*time.Second, 200*time.Millisecond, "store %s through %s", store, b)
		}
	}
	shards := func() map[string]int {
		rep, err := c0.Status(ctx, strata.StatusOptions{Prefix: "scale-", Limit: 100})
		require.NoError(t, err)
		out := map[string]int{}
		for _, s := range rep.Stores {
			out[s.Name] = s.Shards
		}
		return out
	}
	for _, store := range names {
		require.Eventually(t, func() bool { return shards()[store] > 0 }, 30*time.Second, 200*time.Millisecond)
		require.LessOrEqual(t, shards()[store], 2+1, "store %s: its first worker and its preferred one at most (fan-out 2, +1)", store)
		// Merged through its preferred worker: every acked row still there, shards no more.
		base, err := rr.pick(ctx, store)
		require.NoError(t, err)
		resp, err := http.Post(base+"/api/v1/internal/merge-wal/"+store, "application/json", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		n := 0
		require.NoError(t, c0.Scan(ctx, strata.KindRollout, store, strata.ScanOptions{}, func(json.RawMessage) error { n++; return nil }))
		require.Equal(t, len(acked[store]), n)
		require.LessOrEqual(t, shards()[store], 3)
	}
}

// processCPU is the CPU time (user + system) the processes have used, from /proc.
func processCPU(t testing.TB, pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		require.NoError(t, err)
		// Fields after the command name (which may hold spaces) start after the last ')'.
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		utime, err := strconv.ParseInt(f[11], 10, 64)
		require.NoError(t, err)
		stime, err := strconv.ParseInt(f[12], 10, 64)
		require.NoError(t, err)
		ticks += utime + stime
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// BenchmarkP18ClusterAppend: appends of 100-row batches (~300 B a row) from 32 writers to 64
// rollout stores, following routes, through 1, 2, 4 and 8 `strata serve` processes on this
// machine sharing one data directory and catalog, 8 s each. Reported: rows/s for each, its
// scaling over one process, and the API processes' CPU per row (user + system), which is what
// extrapolates past this machine's two cores.
func BenchmarkP18ClusterAppend(b *testing.B) {
	const stores, writers, perBatch, run = 64, 32, 100, 8 * time.Second
	payload := strings.Repeat("y", 280)
	for b.Loop() {
		var one float64
		for _, n := range []int{1, 2, 4, 8} {
			db := testenv.Database(b)
			dataDir := b.TempDir()
			bases, procs := startServeProcesses(b, n, db, dataDir, "STRATA_HEARTBEAT_INTERVAL=500ms")
			ctx := context.Background()
			c0, err := strata.New(bases[0])
			if err != nil {
				b.Fatal(err)
			}
			names := make([]string, stores)
			for i := range names {
				names[i] = fmt.Sprintf("load-%02d", i)
				if _, _, err := c0.CreateStore(ctx, strata.KindRollout, names[i], strata.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			waitLive(b, bases)
			rr := &roundRobin{bases: bases, preferred: map[string]string{}}
			pids := make([]int, len(procs))
			for i, p := range procs {
				pids[i] = p.cmd.Process.Pid
			}
			cpu0 := processCPU(b, pids)
			runCtx, stop := context.WithTimeout(ctx, run)
			var rows atomic.Int64
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; runCtx.Err() == nil; i++ {
						batch := make([]string, perBatch)
						for j := range batch {
							batch[j] = fmt.Sprintf(`{"id": "w%02d-%06d-%03d", "rollout_id": "r", "content": %q}`, w, i, j, payload)
						}
						if err := rr.appendRows(runCtx, names[(w*7+i)%stores], batch); err != nil {
							if runCtx.Err() == nil {
								b.Error(err)
							}
							return
						}
						rows.Add(perBatch)
					}
				}()
			}
			wg.Wait()
			stop()
			cpu := processCPU(b, pids) - cpu0
			rate := float64(rows.Load()) / run.Seconds()
			if n == 1 {
				one = rate
			}
			for _, p := range procs {
				p.stop()
			}
			benchfmt.Report(fmt.Sprintf("P18-cluster-append-rows-%d", n), rate, "rows/s",
				fmt.Sprintf("%d strata serve processes on this machine (2 cores), 32 writers, 64 stores, 100-row batches; %.2fx one process; API CPU %.1f µs a row",
					n, rate/one, float64(cpu.Microseconds())/float64(rows.Load())))
		}
	}
}

// startServeProcesses is startServeCluster returning the processes too (the benchmark reads
// their CPU time and stops them between runs).
func startServeProcesses(t testing.TB, n int, db, dataURL string, extraEnv ...string) ([]string, []*clusterProcess) {
	t.Helper()
	noTemporal, err := testenv.FreePort()
	require.NoError(t, err)
	bases := make([]string, n)
	procs := make([]*clusterProcess, n)
	for i := range n {
		port, err := testenv.FreePort()
		require.NoError(t, err)
		bases[i] = fmt.Sprintf("http://127.0.0.1:%d", port)
		procs[i] = &clusterProcess{t: t, args: []string{"serve"}, dir: t.TempDir(),
			env: []string{"STRATA_DATABASE_URL=" + db, "STRATA_DATA_URL=" + dataURL,
				fmt.Sprintf("STRATA_TEMPORAL_ADDRESS=127.0.0.1:%d", noTemporal), "STRATA_LOG_LEVEL=error",
				fmt.Sprintf("STRATA_INSTANCE_ID=w%d", i), fmt.Sprintf("STRATA_LISTEN_ADDR=127.0.0.1:%d", port)}}
		procs[i].env = append(procs[i].env, extraEnv...)
		procs[i].start()
		t.Cleanup(procs[i].stop)
	}
	for _, b := range bases {
		waitHealthy(t, b)
	}
	return bases, procs
}

// waitLive waits until every worker's route names all of them as live.
func waitLive(t testing.TB, bases []string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, b := range bases {
			c, _ := strata.New(b)
			r, err := c.Route(context.Background(), strata.KindRollout, "load-00")
			if err != nil || r.LiveWorkers != len(bases) {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "every worker sees all %d", len(bases))
}
