package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/catalogseed"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

// BenchmarkP5SweepDuration: the sweep activity at 1,000,000 registered stores of 100 tenants,
// 10,000 of them merge candidates (internal/catalogseed), queueing its requests on the Temporal
// dev server (a namespace of its own, no worker: the store workflows it starts wait there). One
// sweep reads every candidate query (fair across tenants) and queues its cap of 1,024 requests
// with signal-with-start; the next sweeps page on (a queued store is skipped until its
// maintenance ran). Reported: the first sweep's duration, how many sweeps and how long it took
// to queue every candidate, and the store workflows running at the end (one per store queued:
// none is kept for a store that was never queued).
func BenchmarkP5SweepDuration(b *testing.B) {
	addr := benchTemporalAddress(b)
	const stores = 1_000_000
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for b.Loop() {
		url := testenv.Database(b)
		cat, err := catalog.Open(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		if err := catalogseed.Seed(ctx, url, stores); err != nil {
			b.Fatal(err)
		}
		c, namespace := benchNamespace(b, addr, "strata-p5", log)
		mgr, err := storecache.New(cat, storecache.Config{DataURL: b.TempDir(), Store: lsm.Options{Instance: "p5"}}, nil, log)
		if err != nil {
			b.Fatal(err)
		}
		acts := &activities.Activities{Stores: mgr, Request: func(ctx context.Context, s workflows.StoreRef, r workflows.Request) error {
			var err error
			for range 50 { // a new namespace takes a moment to reach every service
				if _, err = worker.RequestMaintenance(ctx, c, s, r); err == nil {
					return nil
				}
				time.Sleep(100 * time.Millisecond)
			}
			return err
		}}
		// The plan alone: the same sweep with requests that go nowhere (and a requeue bound of
		// a nanosecond, so what it marks swept is a candidate again for the sweeps below).
		planOnly := &activities.Activities{Stores: mgr, Request: func(context.Context, workflows.StoreRef, workflows.Request) error { return nil }}
		t0 := time.Now()
		if _, err := planOnly.SweepCandidates(ctx, workflows.SweepInput{MaxStatsRefreshes: 1, RequeueAfter: time.Nanosecond}); err != nil {
			b.Fatal(err)
		}
		plan := time.Since(t0)
		// A first request in the new namespace: it takes a moment to reach every service.
		if err := acts.Request(ctx, workflows.StoreRef{Kind: catalog.KindRollout, Name: catalogseed.Name(1)}, workflows.Request{Op: workflows.OpStatsRefresh}); err != nil {
			b.Fatal(err)
		}
		in := workflows.SweepInput{MaxStatsRefreshes: 1} // the seeded stats are fresh
		var first time.Duration
		var sweeps, merges int
		start := time.Now()
		for sweeps < 30 && merges < stores/100 {
			t0 := time.Now()
			res, err := acts.SweepCandidates(ctx, in)
			if err != nil {
				b.Fatal(err)
			}
			if sweeps == 0 {
				first = time.Since(t0)
			}
			sweeps++
			merges += res.Queued[workflows.OpMergeWAL]
		}
		pageThrough := time.Since(start)
		running, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace,
			Query: "ExecutionStatus = 'Running'"})
		if err != nil {
			b.Fatal(err)
		}
		_ = mgr.Close(ctx)
		c.Close()
		cat.Close()
		benchfmt.Report("P5-sweep-duration", first.Seconds(), "s",
			"one sweep at 1M stores with 10,000 merge candidates: every candidate query plus 1,024 signal-with-starts on the Temporal dev server (goal <= 2)")
		benchfmt.Report("P5-sweep-plan", plan.Seconds(), "s",
			"the same sweep's catalog part alone: every candidate query, 1,024 requests planned and marked swept (requests sent nowhere)")
		benchfmt.Report("P5-sweep-page-through", pageThrough.Seconds(), "s",
			fmt.Sprintf("sweeps back to back until all 10,000 merge candidates were queued (%d sweeps, %d merge requests)", sweeps, merges))
		benchfmt.Report("P5-running-store-workflows", float64(running.GetCount()), "workflows",
			fmt.Sprintf("store workflows running after the sweeps, of %d stores (one per store queued)", stores))
	}
}
