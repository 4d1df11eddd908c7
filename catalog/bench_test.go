package catalog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
)

// lance-context's registry, measured in production: 47 s per create, 0.7 s per get.
const (
	lanceContextCreate = 47 * time.Second
	lanceContextGet    = 700 * time.Millisecond
)

// BenchmarkP5Registry measures the catalog at 1,000,000 registered stores (two shards each, with
// realistic pending/fragment spreads): create p99, get p99 and each sweep candidate query.
func BenchmarkP5Registry(b *testing.B) {
	const stores = 1_000_000
	ctx := context.Background()
	url := testenv.Database(b)
	c, err := catalog.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := seedP5(ctx, url, stores); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))

	for b.Loop() {
		create, err := benchfmt.Time(2000, func(i int) error {
			_, _, err := c.CreateStore(ctx, catalog.StoreDefinition{
				Kind: catalog.KindRollout, Name: fmt.Sprintf("new-%06d", i), URI: fmt.Sprintf("file:///data/new-%06d", i)})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		get, err := benchfmt.Time(5000, func(int) error {
			_, err := c.GetStore(ctx, catalog.KindRollout, fmt.Sprintf("exp-%06d", rng.IntN(stores)))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		upsert, err := benchfmt.Time(200, func(i int) error {
			batch := make([]catalog.ShardStats, 100)
			for j := range batch {
				batch[j] = catalog.ShardStats{Kind: catalog.KindRollout, Name: fmt.Sprintf("exp-%06d", rng.IntN(stores)),
					Shard: "shard-a", PendingGenerations: rng.IntN(20), PendingRows: 100}
			}
			return c.UpsertShardStats(ctx, batch)
		})
		if err != nil {
			b.Fatal(err)
		}
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
			{"P5-cleanup-candidates-p99", "stores holding garbage (64 MiB, or as much as their data) or 64 versions behind, top 256", func() ([]catalog.StoreStats, error) {
				return c.CleanupCandidates(ctx, catalog.CleanupPolicy{MinVersions: 64, MinGarbageBytes: 64 << 20, VolumeInterval: 15 * time.Minute,
					GarbageRatio: 1, RatioInterval: time.Hour}, 256)
			}},
		}

		createP99, getP99 := benchfmt.Percentile(create, 99), benchfmt.Percentile(get, 99)
		benchfmt.Report("P5-create-p99", benchfmt.Millis(createP99), "ms", "registry create p99 at 1M stores (goal <= 20)")
		benchfmt.Report("P5-create-vs-lance-context", float64(lanceContextCreate)/float64(createP99), "x", "lance-context create (47 s) / Strata create p99")
		benchfmt.Report("P5-get-p99", benchfmt.Millis(getP99), "ms", "registry get p99 at 1M stores (goal <= 2)")
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

// seedP5 registers n rollout stores with two shards each and stats spread so that every
// candidate query has work: ~5% of stores are merge candidates, ~3% compaction candidates.
func seedP5(ctx context.Context, url string, n int) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		`INSERT INTO stores (id, kind, name, uri)
		 SELECT gen_random_uuid(), 'rollout', format('exp-%s', lpad(i::text, 6, '0')), format('file:///data/exp-%s', i)
		 FROM generate_series(0, $1 - 1) AS i`,
		`INSERT INTO shard_stats (kind, name, shard, pending_generations, pending_rows, pending_bytes, oldest_pending_at)
		 SELECT 'rollout', format('exp-%s', lpad(i::text, 6, '0')), s,
		        g, g * 100, g * 100000, CASE WHEN g > 0 THEN now() - make_interval(secs => (i % 3600)) END
		 FROM generate_series(0, $1 - 1) AS i, unnest(ARRAY['shard-a', 'shard-b']) AS s,
		      LATERAL (SELECT CASE WHEN i % 20 = 0 THEN 4 + i % 30 ELSE i % 3 END AS g) AS gen`,
		`INSERT INTO store_stats (kind, name, table_version, base_rows, fragments, index_covered_fragments,
		                          pending_generations, oldest_pending_at, compactable_fragments, bytes, dropped_bytes)
		 SELECT kind, name, 10, 100000, f, CASE WHEN (hashtext(name) & 7) = 0 THEN f - 1 ELSE f END,
		        sum(pending_generations), min(oldest_pending_at), CASE WHEN f >= 16 THEN f / 2 ELSE 0 END,
		        f * (1 << 20), (abs(hashtext(name)) % 100) * (1 << 20)
		 FROM shard_stats, LATERAL (SELECT CASE WHEN hashtext(name) % 33 = 0 THEN 16 + abs(hashtext(name)) % 40
		                                        ELSE 1 + abs(hashtext(name)) % 12 END AS f) AS frag
		 GROUP BY kind, name, f`,
	} {
		args := []any{n}
		if !strings.Contains(sql, "$1") {
			args = nil
		}
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	_, err = conn.Exec(ctx, `ANALYZE`)
	return err
}
