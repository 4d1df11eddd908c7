package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/worker"
)

const (
	p18Run        = 75 * time.Second
	p18Slots      = 2
	p18StoresA    = 120 // the flooding tenant's stores
	p18StoresB    = 12
	p18RowsB      = 3 // rows per 100 ms tick to tenant b's stores (30 rows/s); tenant a gets 10x
	p18StoreDelay = 4 * time.Millisecond
)

// BenchmarkP18FairShare: two tenants' stores take appends (sealed every second by the flush
// sweeper, a merge asked for at 8 pending generations, as `strata serve` does) and one
// maintenance worker with 2 activity slots merges them over a slow store (every storage call of
// the maintenance process sleeps 4 ms first, like an object store), so merges are the
// bottleneck. Tenant b's merge staleness (threshold crossed -> merged) is measured alone, then
// with tenant a appending ten times b's rows over ten times its stores. With fair shares of the
// slots, b waits for its share, not for a's backlog.
func BenchmarkP18FairShare(b *testing.B) {
	addr := benchTemporalAddress(b)
	for b.Loop() {
		alone := p18Staleness(b, addr, false)
		flooded := p18Staleness(b, addr, true)
		benchfmt.Report("P18-fair-share", flooded.p99.Seconds()/alone.p99.Seconds(), "x",
			fmt.Sprintf("tenant b's merge staleness p99 with tenant a flooding (10x its rows and stores) / alone: %.1f s / %.1f s (p50 %.1f / %.1f s; a's p99 %.1f s; %d / %d samples of b) (goal <= 1.5)",
				flooded.p99.Seconds(), alone.p99.Seconds(), flooded.p50.Seconds(), alone.p50.Seconds(), flooded.otherP99.Seconds(), flooded.samples, alone.samples))
	}
}

type p18Result struct {
	p50, p99, otherP99 time.Duration
	samples            int
}

func p18Staleness(b *testing.B, addr string, flood bool) p18Result {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dbURL := testenv.Database(b)
	cat, err := catalog.Open(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	c, _ := benchNamespace(b, addr, "strata-p18", log)
	defer c.Close()
	dataDir := b.TempDir()
	api, _ := benchStores(b, cat, c, dataDir, "p18", 0) // merges asked for through c at 8 pending generations
	var storesA, storesB []string
	for i := range p18StoresA {
		storesA = append(storesA, fmt.Sprintf("a.s%03d", i))
	}
	for i := range p18StoresB {
		storesB = append(storesB, fmt.Sprintf("b.s%03d", i))
	}
	for _, n := range append(append([]string{}, storesA...), storesB...) {
		if _, _, err := api.Create(ctx, catalog.KindRollout, n, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	slow := func(s objstore.Store) objstore.Store {
		f := objstoretest.NewFaulty(s)
		f.AddRule(objstoretest.Rule{Latency: p18StoreDelay})
		return f
	}
	maint, err := storecache.New(cat, storecache.Config{DataURL: dataDir, Capacity: 2000, WrapObjects: slow,
		Store: lsm.Options{Instance: "maint", ReadOnly: true}}, nil, log)
	if err != nil {
		b.Fatal(err)
	}
	w := worker.New(c, &activities.Activities{Stores: maint, Tenancy: catalog.DefaultTenancy}, worker.Options{ActivitySlots: p18Slots})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()

	runCtx, stop := context.WithTimeout(ctx, p18Run)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); appendLoad(b, runCtx, api, storesB, p18RowsB, 100*time.Millisecond, 1) }()
	go func() { defer wg.Done(); flushSweeper(runCtx, api) }()
	if flood {
		wg.Add(1)
		go func() { defer wg.Done(); appendLoad(b, runCtx, api, storesA, 10*p18RowsB, 100*time.Millisecond, 2) }()
	}
	samples, _ := watchStaleness(b, runCtx, pool)
	stale := map[bool][]time.Duration{} // by "is tenant b"
	for name, d := range samples {
		isB := strings.HasPrefix(name, "b.")
		stale[isB] = append(stale[isB], d...)
	}
	stop()
	wg.Wait()
	w.Stop()
	_ = maint.Close(ctx)
	_ = api.Close(ctx)
	if len(stale[true]) == 0 {
		b.Fatal("no store of tenant b crossed the threshold and got merged during the run")
	}
	r := p18Result{p50: benchfmt.Percentile(stale[true], 50), p99: benchfmt.Percentile(stale[true], 99), samples: len(stale[true])}
	if len(stale[false]) > 0 {
		r.otherP99 = benchfmt.Percentile(stale[false], 99)
	}
	return r
}
