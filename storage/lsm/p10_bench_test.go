package lsm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// BenchmarkP10ObjectStoreAppend runs A1's load (durable 1 KB single-row appends from 1, 8 and
// 64 concurrent appenders) against a store on each object store's test service (WAL entry
// objects, one conditional PUT per group commit) and against a local store in the same run:
// rows/s, the append latency distribution on the object store, and the writes one append costs.
// The emulators here answer in about a millisecond; the "-20ms" rows add 20 ms to every call,
// closer to a real region, where a group commit costs one round trip (the entry's conditional
// PUT is the epoch check: docs/format/memwal.md). The GCS store is linked with -tags gcs.
func BenchmarkP10ObjectStoreAppend(b *testing.B) {
	for b.Loop() {
		for _, kind := range testenv.ObjectStoreKinds {
			benchObjectStoreAppend(b, kind)
		}
	}
}

func benchObjectStoreAppend(b *testing.B, kind string) {
	payload := strings.Repeat("y", 1000)
	ctx := context.Background()
	for _, c := range []struct {
		appenders, each int
		latency         time.Duration
	}{{1, 200, 0}, {8, 100, 0}, {64, 30, 0}, {8, 20, 20 * time.Millisecond}, {64, 10, 20 * time.Millisecond}} {
		remote, err := objstore.Open(ctx, testenv.ObjectStore(b, kind))
		if err != nil {
			b.Fatal(err)
		}
		if c.latency > 0 {
			slow := objstoretest.NewFaulty(remote)
			slow.AddRule(objstoretest.Rule{Latency: c.latency})
			remote = slow
		}
		counted := objstoretest.NewCounting(remote)
		onRemote, err := Create(ctx, counted, userSchema, "id", benchOpts("writer"))
		if err != nil {
			b.Fatal(err)
		}
		local := benchStore(b, b.TempDir(), "writer")
		before := counted.Stats()
		remoteRate, lat := runAppenders(b, onRemote, c.appenders, c.each, payload)
		calls := counted.Stats().Sub(before)
		localRate, _ := runAppenders(b, local, c.appenders, c.each, payload)
		slices.Sort(lat)
		p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
		n, who := fmt.Sprint(c.appenders), fmt.Sprintf("%d appenders", c.appenders)
		if c.latency > 0 {
			n += fmt.Sprintf("-%dms", c.latency.Milliseconds())
			who += fmt.Sprintf(", %v added to every %s call", c.latency, kind)
		}
		appends := float64(c.appenders * c.each)
		id := func(name string) string { return "P10-" + kind + "-" + name + "-" + n }
		benchfmt.Report(id("append-rows"), remoteRate, "rows/s", fmt.Sprintf("durable 1 KB single-row appends to a store on %s, %s", kind, who))
		benchfmt.Report(id("append-vs-local"), remoteRate/localRate, "x", fmt.Sprintf("%s rows/s / local-disk rows/s (%.0f), same load, same run", kind, localRate))
		benchfmt.Report(id("append-p50"), p(0.5), "ms", fmt.Sprintf("append latency on %s, %s, p50", kind, who))
		benchfmt.Report(id("append-p99"), p(0.99), "ms", fmt.Sprintf("append latency on %s, %s, p99 (the first append claims the shard)", kind, who))
		benchfmt.Report(id("puts-per-append"), float64(calls.Writes)/appends, "PUT", fmt.Sprintf("object writes per append on %s (group commit), %s", kind, who))
		benchfmt.Report(id("requests-per-append"), float64(calls.Reads+calls.Writes+calls.Lists)/appends, "requests", fmt.Sprintf("requests per append on %s (writes, reads, listings; the claim included), %s", kind, who))
		_ = onRemote.Close(ctx)
		_ = local.Close(ctx)
	}
}

// runAppenders runs appenders goroutines, each appending each single-row batches of payload to s
// durably, and returns the rows per second and every append's latency.
func runAppenders(b *testing.B, s *Store, appenders, each int, payload string) (float64, []time.Duration) {
	ctx := context.Background()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	start := time.Now()
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rb := payloadRows(1, a*1_000_000+i, payload)
				rec := rb.NewRecordBatch()
				rb.Release()
				t0 := time.Now()
				_, err := s.Append(ctx, rec)
				d := time.Since(t0)
				rec.Release()
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return float64(appenders*each) / time.Since(start).Seconds(), lat
}
