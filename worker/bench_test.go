package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

const (
	p6Active   = 1000             // stores taking appends
	p6Interval = 30 * time.Second // the default sweep schedule
	p6Run      = 150 * time.Second
)

// BenchmarkP6MaintenanceStaleness: 1,000 stores receive appends (the flush sweeper seals and
// reports every second); a seal that leaves a shard at 8 pending generations asks for a merge at
// once (as `strata serve` does), the default 30 s sweep schedule is the safety net, and one
// worker with 4 activity slots merges. Measured: time from a store crossing the merge threshold
// (8 pending generations in the catalog) to merged, and merges per minute. Then the same with
// 10,000 stores registered, 1,000 of them taking appends: the sweep also finds 9,000 idle stores
// whose stats were never observed (stats refreshes compete with the merges for the slots).
func BenchmarkP6MaintenanceStaleness(b *testing.B) {
	addr := benchTemporalAddress(b)
	for b.Loop() {
		if slices.ContainsFunc([]string{"P6-staleness-p50", "P6-staleness-p99-over-interval", "P6-merges-per-minute",
			"P6-activity-mean", "P6-slot-utilization"}, benchfmt.Selected) {
			p6Staleness(b, addr, p6Active, "")
		}
		if benchfmt.Wanted("P6-staleness-p99-over-interval-10k") {
			p6Staleness(b, addr, 10*p6Active, "-10k")
		}
	}
}

// p6Staleness runs one staleness measurement with stores registered, p6Active of them taking
// appends; figure IDs get suffix.
func p6Staleness(b *testing.B, addr string, stores int, suffix string) {
	ctx := context.Background()
	{
		dbURL := testenv.Database(b)
		cat, err := catalog.Open(ctx, dbURL)
		if err != nil {
			b.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		c, err := client.Dial(client.Options{HostPort: addr, Logger: log})
		if err != nil {
			b.Fatal(err)
		}
		mgr, names := benchStores(b, cat, c, b.TempDir(), "p6", stores)
		reg := prometheus.NewRegistry()
		w := worker.New(c, &activities.Activities{Stores: mgr, Metrics: activities.NewMetrics(reg)}, worker.Options{ActivitySlots: 4})
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		if err := worker.EnsureSweepSchedule(ctx, c, p6Interval, workflows.SweepInput{}); err != nil {
			b.Fatal(err)
		}
		pool, err := pgxpool.New(ctx, dbURL)
		if err != nil {
			b.Fatal(err)
		}

		runCtx, stop := context.WithTimeout(ctx, p6Run)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); appendLoad(b, runCtx, mgr, names[:p6Active], 50, 200*time.Millisecond, 6) }()
		go func() { defer wg.Done(); flushSweeper(runCtx, mgr) }()
		mergesAt := func() int64 {
			var n int64
			_ = pool.QueryRow(ctx, `SELECT COALESCE(sum(merges_total), 0) FROM store_stats`).Scan(&n)
			return n
		}
		startMerges, start := mergesAt(), time.Now()
		samples, censored := watchStaleness(b, runCtx, pool)
		var staleness []time.Duration
		for _, d := range samples {
			staleness = append(staleness, d...)
		}
		stop()
		wg.Wait()
		elapsed := time.Since(start)
		minutes := elapsed.Minutes()
		merges := float64(mergesAt()-startMerges) / minutes
		_ = c.ScheduleClient().GetHandle(ctx, workflows.SweepScheduleID).Delete(ctx)
		// The worker first: its activities hold stores of mgr (a store acquired or released after
		// mgr closed would be opened, or closed, with nobody waiting for it). Then the stores,
		// before the client: their last seals may still ask for merges.
		w.Stop()
		_ = mgr.Close(ctx)
		c.Close()
		pool.Close()
		cat.Close()
		if len(staleness) == 0 {
			b.Fatal("no store crossed the threshold and got merged during the run")
		}
		p50, p99 := benchfmt.Percentile(staleness, 50), benchfmt.Percentile(staleness, 99)
		busy, runs := activityTime(b, reg)
		if suffix != "" {
			benchfmt.Report("P6-staleness-p99-over-interval"+suffix, p99.Seconds()/p6Interval.Seconds(), "x",
				fmt.Sprintf("%d stores registered, %d taking appends: staleness p99 / sweep interval (p50 %.2f s, p99 %.1f s, %d samples, %d still waiting; %.0f merges/min; %d activity attempts)",
					stores, p6Active, p50.Seconds(), p99.Seconds(), len(staleness), censored, merges, runs))
			return
		}
		benchfmt.Report("P6-staleness-p50", p50.Seconds(), "s", fmt.Sprintf("1,000 stores: threshold crossed -> merged, p50 (%d samples, %d still waiting at the end)", len(staleness), censored))
		benchfmt.Report("P6-staleness-p99", p99.Seconds(), "s", "threshold crossed -> merged, p99, default 30 s sweep")
		benchfmt.Report("P6-staleness-p99-over-interval", p99.Seconds()/p6Interval.Seconds(), "x", "staleness p99 / sweep interval (goal <= 0.5 with merges following seals)")
		benchfmt.Report("P6-merges-per-minute", merges, "merges/min", "WAL merges committed per minute, one worker with 4 activity slots")
		benchfmt.Report("P6-activity-mean", benchfmt.Millis(busy/time.Duration(max(runs, 1))), "ms", fmt.Sprintf("mean maintenance activity attempt (%d attempts)", runs))
		benchfmt.Report("P6-slot-utilization", busy.Seconds()/(4*elapsed.Seconds()), "x", "activity time / (4 slots x run time)")
	}
}

// watchStaleness polls store_stats every 500 ms until runCtx ends: each time a store's pending
// generations reach 8 its clock starts, and when they fall below 8 (merged) the time since is a
// sample, by store. Stores still waiting at the end count with the time they have waited so far
// (a lower bound; censored says how many), so a backlog shows in the percentiles instead of
// vanishing from them.
func watchStaleness(b *testing.B, runCtx context.Context, pool *pgxpool.Pool) (samples map[string][]time.Duration, censored int) {
	ctx := context.WithoutCancel(runCtx)
	crossed := map[string]time.Time{}
	samples = map[string][]time.Duration{}
	for runCtx.Err() == nil {
		rows, err := pool.Query(ctx, `SELECT name, pending_generations FROM store_stats WHERE kind = 'rollout'`)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for rows.Next() {
			var name string
			var pending int
			if err := rows.Scan(&name, &pending); err != nil {
				b.Fatal(err)
			}
			t0, was := crossed[name]
			switch {
			case pending >= 8 && !was:
				crossed[name] = now
			case pending < 8 && was:
				samples[name] = append(samples[name], now.Sub(t0))
				delete(crossed, name)
			}
		}
		rows.Close()
		time.Sleep(500 * time.Millisecond)
	}
	end := time.Now()
	for name, t0 := range crossed {
		samples[name] = append(samples[name], end.Sub(t0))
	}
	return samples, len(crossed)
}

// benchStores opens a store manager over dataDir that, as `strata serve` does, asks for a merge
// through c as soon as a seal leaves a shard at 8 pending generations, and creates n rollout
// stores named <prefix>-<i>.
func benchStores(b *testing.B, cat *catalog.Catalog, c client.Client, dataDir, prefix string, n int) (*storecache.Manager, []string) {
	ctx := context.Background()
	mgr, err := storecache.New(cat, storecache.Config{DataURL: dataDir, Capacity: 2000, Store: lsm.Options{Instance: "api"},
		MergeAfterGenerations: 8, RequestMerge: func(ctx context.Context, kind catalog.Kind, name string) error {
			_, err := worker.RequestMaintenance(ctx, c, workflows.StoreRef{Kind: kind, Name: name}, workflows.Request{Op: workflows.OpMergeWAL})
			return err
		}}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", prefix, i)
		if _, _, err := mgr.Create(ctx, catalog.KindRollout, names[i], nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	return mgr, names
}

// activityTime sums the maintenance activity durations the worker recorded.
func activityTime(b *testing.B, reg *prometheus.Registry) (time.Duration, int) {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() != "strata_maintenance_activity_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetHistogram().GetSampleSum()
			n += m.GetHistogram().GetSampleCount()
		}
	}
	return time.Duration(sum * float64(time.Second)), int(n)
}

// benchTemporalAddress is the Temporal dev server's address (make bench starts it), or skips the
// benchmark without one.
func benchTemporalAddress(b *testing.B) string {
	addr := os.Getenv("STRATA_TEST_TEMPORAL_ADDRESS")
	if addr == "" {
		b.Skip("needs the Temporal dev server (make bench starts it)")
	}
	return addr
}

// benchNamespace registers a namespace of its own (named prefix-<now>) on the Temporal server at
// addr and returns a client of it: a benchmark's workflows stay there, apart from every test's.
func benchNamespace(b *testing.B, addr, prefix string, log *slog.Logger) (client.Client, string) {
	namespace := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	nc, err := client.NewNamespaceClient(client.Options{HostPort: addr, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Register(context.Background(), &workflowservice.RegisterNamespaceRequest{Namespace: namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		b.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: namespace, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	return c, namespace
}

// appendLoad appends one row to each of rows random stores of stores every tick (a seeded
// choice), until run ends.
func appendLoad(b *testing.B, run context.Context, mgr *storecache.Manager, stores []string, rows int, tick time.Duration, seed uint64) {
	ctx := context.WithoutCancel(run) // an append begun finishes
	rng := rand.New(rand.NewPCG(seed, seed))
	seq := 0
	for run.Err() == nil {
		for range rows {
			s, release, err := mgr.Acquire(ctx, catalog.KindRollout, stores[rng.IntN(len(stores))])
			if err != nil {
				b.Error(err)
				return
			}
			seq++
			appendRow(b, s, fmt.Sprintf("r%08d", seq))
			release()
		}
		time.Sleep(tick)
	}
}

// flushSweeper seals what is due every second until run ends, as `strata serve`'s does.
func flushSweeper(run context.Context, mgr *storecache.Manager) {
	for run.Err() == nil {
		mgr.FlushPass(context.WithoutCancel(run), time.Second, nil)
		time.Sleep(time.Second)
	}
}
