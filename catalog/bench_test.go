package catalog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/catalogseed"
	"github.com/strata-store/strata/internal/testenv"
)

// lance-context's registry, measured in production: 47 s per create, 0.7 s per get.
const (
	lanceContextCreate = 47 * time.Second
	lanceContextGet    = 700 * time.Millisecond
)

// BenchmarkP5Registry measures the catalog at 1,000,000 registered stores (two shards each, with
// realistic pending/fragment spreads, 100 tenants, 10,000 merge candidates; internal/catalogseed):
// create p99, get p99 and each sweep candidate query. (P5-sweep-duration, the whole sweep against
// the Temporal dev server, is measured in package worker.)
func BenchmarkP5Registry(b *testing.B) {
	const stores = 1_000_000
	ctx := context.Background()
	url := testenv.Database(b)
	c, err := catalog.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := catalogseed.Seed(ctx, url, stores); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))

	for b.Loop() {
		create, err := benchfmt.Time(2000, func(i int) error {
			_, _, err := c.CreateStore(ctx, catalog.StoreDefinition{
				Kind: catalog.KindRollout, Name: fmt.Sprintf("t%d.new-%06d", i%catalogseed.Tenants, i), URI: fmt.Sprintf("file:///data/new-%06d", i)})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		get, err := benchfmt.Time(5000, func(int) error {
			_, err := c.GetStore(ctx, catalog.KindRollout, catalogseed.Name(rng.IntN(stores)))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		upsert, err := benchfmt.Time(200, func(i int) error {
			batch := make([]catalog.ShardStats, 100)
			for j := range batch {
				batch[j] = catalog.ShardStats{Kind: catalog.KindRollout, Name: catalogseed.Name(rng.IntN(stores)),
					Shard: "shard-a", PendingGenerations: rng.IntN(20), PendingRows: 100}
			}
			return c.UpsertShardStats(ctx, batch)
		})
		if err != nil {
			b.Fatal(err)
		}
		fair := c.Candidates(catalog.CandidateOptions{Tenancy: catalog.DefaultTenancy, RequeueAfter: catalog.DefaultRequeueAfter})
		queries := []struct {
			id, desc string
			run      func() ([]catalog.StoreStats, error)
		}{
			{"P5-merge-candidates-p99", "stores with >= 8 pending generations, top 256", func() ([]catalog.StoreStats, error) {
				return c.MergeCandidates(ctx, 8, 256)
			}},
			{"P5-stale-candidates-p99", "stores with a generation pending > 10 min, top 256", func() ([]catalog.StoreStats, error) {
				return c.StaleMergeCandidates(ctx, time.Now().Add(-10*time.Minute), 256)
			}},
			{"P5-compact-candidates-p99", "stores whose compaction plan would rewrite fragments, top 256", func() ([]catalog.StoreStats, error) {
				return c.CompactCandidates(ctx, 256)
			}},
			{"P5-index-candidates-p99", "stores whose key index does not cover every fragment, top 256", func() ([]catalog.StoreStats, error) {
				return c.IndexCandidates(ctx, 256)
			}},
			{"P5-merge-candidates-fair-p99", "stores with >= 8 pending generations, top 1,024 shared across 100 tenants (the sweep's query)", func() ([]catalog.StoreStats, error) {
				return fair.Merge(ctx, 8, 1024)
			}},
			{"P5-stale-stats-candidates-p99", "stores whose stats are 10 minutes old or never observed, first 128 (the sweep's stats refresh list)", func() ([]catalog.StoreStats, error) {
				st, err := fair.StaleStats(ctx, time.Now().Add(-10*time.Minute), 128)
				return make([]catalog.StoreStats, len(st)), err
			}},
			{"P5-cleanup-candidates-p99", "stores holding garbage (64 MiB, or as much as their data) or 64 versions behind, top 256", func() ([]catalog.StoreStats, error) {
				return c.CleanupCandidates(ctx, catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 64 << 20, VolumeInterval: 15 * time.Minute,
					GarbageRatio: 1, RatioInterval: time.Hour}, 256)
			}},
		}

		createP99, getP99 := benchfmt.Percentile(create, 99), benchfmt.Percentile(get, 99)
		benchfmt.Report("P5-create-p99", benchfmt.Millis(createP99), "ms", "registry create p99 at 1M stores (goal <= 5)")
		benchfmt.Report("P5-create-vs-lance-context", float64(lanceContextCreate)/float64(createP99), "x", "lance-context create (47 s) / Strata create p99")
		benchfmt.Report("P5-get-p99", benchfmt.Millis(getP99), "ms", "registry get p99 at 1M stores (goal <= 1)")
		benchfmt.Report("P5-get-vs-lance-context", float64(lanceContextGet)/float64(getP99), "x", "lance-context get (0.7 s) / Strata get p99")
		benchfmt.Report("P5-shard-upsert-p99", benchfmt.Millis(benchfmt.Percentile(upsert, 99)), "ms", "batched shard_stats upsert of 100 shards p99")
		for _, q := range queries {
			var n int
			d, err := benchfmt.Time(200, func(int) error {
				res, err := q.run()
				n = len(res)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				b.Fatalf("%s returned no candidates: the seed is wrong", q.id)
			}
			benchfmt.Report(q.id, benchfmt.Millis(benchfmt.Percentile(d, 99)), "ms", q.desc+" at 1M stores, p99 (goal <= 20)")
		}
	}
}
