package table

import (
	"context"
	"time"

	"testing"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// BenchmarkP10ObjectStoreTable is P1's merge (a 1,000-row upsert, half replacing, half new, key
// index covering) on each object store's test service (S3 on versitygw, Azure Blob on Azurite,
// GCS on fake-gcs-server; behind the process read cache as a server runs it) into a 20k-, a
// 500k- and a 2M-row table: the time ratio 500k / 20k, and the requests one merge sends, which
// must not grow with the table; then point gets on the 500k-row table with a warm cache and with
// an empty one (a fresh process). The stores are wrapped as a server wraps them (hedged reads
// under the read cache: storecache). The GCS store is linked with -tags gcs (scripts/bench.sh).
func BenchmarkP10ObjectStoreTable(b *testing.B) {
	for b.Loop() {
		for _, kind := range testenv.ObjectStoreKinds {
			benchObjectStoreTable(b, kind)
		}
	}
}

func benchObjectStoreTable(b *testing.B, kind string) {
	ctx := context.Background()
	const bigRows, hugeRows = 500_000, 2_000_000
	id := func(name string) string { return "P10-" + kind + "-" + name }
	onStore := func(rows int) (*benchTable, *objstoretest.Counting) {
		remote, err := objstore.Open(ctx, testenv.ObjectStore(b, kind))
		if err != nil {
			b.Fatal(err)
		}
		count := objstoretest.NewCounting(remote)
		// One process-wide cache for the object reads and the table's decoded objects, as a
		// server has (its default size).
		c := cache.New(256<<20, nil)
		bt := newBenchTableOn(b, objstore.WithReadCache(objstore.WithHedgedReads(count), c, IsRewrittenKey), count, rows, Options{Cache: c})
		if _, err := bt.tbl.BuildKeyIndex(ctx); err != nil {
			b.Fatal(err)
		}
		return bt, count
	}
	requests := func(bt *benchTable, count *objstoretest.Counting, n int) (time.Duration, float64) {
		var total int64
		var times []time.Duration
		for range n {
			rs := bt.mixedBatch()
			before := count.Stats()
			start := time.Now()
			bt.upsert(b, rs)
			times = append(times, time.Since(start))
			d := count.Stats().Sub(before)
			total += d.Reads + d.Writes + d.Lists
		}
		return benchfmt.Percentile(times, 50), float64(total) / float64(n)
	}
	small, smallCount := onStore(20_000)
	requests(small, smallCount, 2) // warm, as a long-running worker is
	smallT, smallReq := requests(small, smallCount, 7)
	big, bigCount := onStore(bigRows)
	requests(big, bigCount, 2)
	bigT, bigReq := requests(big, bigCount, 7)
	huge, hugeCount := onStore(hugeRows)
	requests(huge, hugeCount, 2)
	hugeT, hugeReq := requests(huge, hugeCount, 5)
	benchfmt.Report(id("merge-20k"), benchfmt.Millis(smallT), "ms", "1,000-row upsert into a 20k-row table on "+kind+", median")
	benchfmt.Report(id("merge-500k"), benchfmt.Millis(bigT), "ms", "1,000-row upsert into a 500k-row table on "+kind+", median")
	benchfmt.Report(id("merge-2m"), benchfmt.Millis(hugeT), "ms", "1,000-row upsert into a 2M-row table on "+kind+", median")
	benchfmt.Report(id("merge-ratio"), float64(bigT)/float64(smallT), "x", kind+" merge time 500k / 20k (goal <= 1.5, as on disk)")
	benchfmt.Report(id("requests-per-merge-20k"), smallReq, "requests", kind+" requests (reads, writes, listings) per 1,000-row upsert, 20k rows")
	benchfmt.Report(id("requests-per-merge-500k"), bigReq, "requests", kind+" requests per 1,000-row upsert, 500k rows (must not grow with the table)")
	benchfmt.Report(id("requests-per-merge-2m"), hugeReq, "requests", kind+" requests per 1,000-row upsert, 2M rows (must not grow with the table)")

	m, err := big.tbl.Latest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	gets := func(tbl *Table, n int) time.Duration {
		return benchfmt.Percentile(timeGets(b, tbl, m, big.rng, bigRows, n), 99)
	}
	gets(big.tbl, 500) // warm
	beforeWarm := big.count.Stats()
	warm := gets(big.tbl, 1000)
	warmCalls := big.count.Stats().Sub(beforeWarm)
	var cold []time.Duration
	var coldRequests int64
	for range 50 { // each get from a fresh handle with empty caches: a process that just started
		c := cache.New(256<<20, nil)
		fresh, err := Open(ctx, objstore.WithReadCache(objstore.WithHedgedReads(big.count), c, IsRewrittenKey), Options{Cache: c})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		bc := big.count.Stats()
		gets(fresh, 1)
		cold = append(cold, time.Since(start))
		coldRequests += big.count.Stats().Sub(bc).Reads + big.count.Stats().Sub(bc).Lists
	}
	benchfmt.Report(id("get-p99"), benchfmt.Millis(warm), "ms", "point get on a merged 500k-row "+kind+" table, warm caches, p99 (goal <= 5)")
	benchfmt.Report(id("requests-per-get-warm"), float64(warmCalls.Reads+warmCalls.Lists)/1000, "requests", "requests of one get with warm caches (after 500 gets): its row's data page, and index pages not yet resident")
	benchfmt.Report(id("get-p99-cold"), benchfmt.Millis(benchfmt.Percentile(cold, 99)), "ms", "the same from a fresh process (empty caches), p99")
	benchfmt.Report(id("get-p50-cold"), benchfmt.Millis(benchfmt.Percentile(cold, 50)), "ms", "the same, p50")
	benchfmt.Report(id("requests-per-get-cold"), float64(coldRequests)/float64(len(cold)), "requests", "requests of one get from a fresh process with the table open (key-index footers and pages, deletion vector, the fragment's footer and pages)")
}
