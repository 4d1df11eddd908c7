// Package catalogseed fills a migrated catalog with many stores and realistic statistics, for the
// registry and sweep benchmarks (P5) and the tests that need a large catalog.
package catalogseed

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Tenants is how many tenants the seeded stores belong to: store i is named
// "t<i mod Tenants>.exp-<i>" (tenant "t<k>" at depth 1 with the "." separator).
const Tenants = 100

// Name is the name of seeded store i.
func Name(i int) string { return fmt.Sprintf("t%d.exp-%07d", i%Tenants, i) }

// Seed registers n rollout stores (names from Name) with two shards each and statistics spread
// so that every candidate query has work: one store in 100 is a merge candidate (8 to 36 pending
// generations; n/100 in all, 10,000 at 1M stores, spread evenly over the tenants), the rest hold 0 to 2 per shard; about one in 33
// is a compaction candidate and one in 8 lacks index coverage; garbage and versions vary.
func Seed(ctx context.Context, url string, n int) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		`INSERT INTO stores (id, kind, name, uri)
		 SELECT gen_random_uuid(), 'rollout', format('t%s.exp-%s', i % 100, lpad(i::text, 7, '0')),
		        format('file:///data/exp-%s', i)
		 FROM generate_series(0, $1 - 1) AS i`,
		`INSERT INTO shard_stats (kind, name, shard, pending_generations, pending_rows, pending_bytes, oldest_pending_at)
		 SELECT 'rollout', format('t%s.exp-%s', i % 100, lpad(i::text, 7, '0')), s,
		        g, g * 100, g * 100000, CASE WHEN g > 0 THEN now() - make_interval(secs => (i % 3600)) END
		 FROM generate_series(0, $1 - 1) AS i, unnest(ARRAY['shard-a', 'shard-b']) AS s,
		      LATERAL (SELECT CASE WHEN (i / 100) % 100 = 0 THEN 4 + i % 15 ELSE i % 3 END AS g) AS gen`,
		`INSERT INTO store_stats (kind, name, table_version, base_rows, fragments, index_covered_fragments,
		                          pending_generations, oldest_pending_at, compactable_fragments, bytes, dropped_bytes)
		 SELECT kind, name, 10, 100000, f, CASE WHEN (hashtext(name) & 7) = 0 THEN f - 1 ELSE f END,
		        sum(pending_generations), min(oldest_pending_at), CASE WHEN f >= 16 THEN f / 2 ELSE 0 END,
		        f * (1 << 20), (abs(hashtext(name)) % 100) * (1 << 20)
		 FROM shard_stats, LATERAL (SELECT CASE WHEN hashtext(name) % 33 = 0 THEN 16 + abs(hashtext(name)) % 40
		                                        ELSE 1 + abs(hashtext(name)) % 12 END AS f) AS frag
		 GROUP BY kind, name, f`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = []any{n}
		}
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	_, err = conn.Exec(ctx, `ANALYZE`)
	return err
}
