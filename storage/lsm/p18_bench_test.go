package lsm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/objstore"
)

// BenchmarkP18GetShards measures point gets on the same 20,000 rows sealed as 128 pending
// generations by one writer (one shard), or by 64 writers of 2 generations each (64 shards, as a
// store written by 64 workers behind a round-robin balancer has before merges), read by a process
// that wrote none of them. The ratio is what each further shard costs a read. On a local disk.
func BenchmarkP18GetShards(b *testing.B) {
	for b.Loop() {
		p18GetShards(b, "", func(b *testing.B) func(string) *Store {
			dir := b.TempDir()
			return func(instance string) *Store { return benchStore(b, dir, instance) }
		})
	}
}

// BenchmarkP18GetShardsS3 is BenchmarkP18GetShards on the S3 test service (versitygw; skipped
// without it), where a listing of 64 shards' heads is one request like a listing of one.
func BenchmarkP18GetShardsS3(b *testing.B) {
	for b.Loop() {
		p18GetShards(b, "-s3", func(b *testing.B) func(string) *Store {
			u := testenv.S3(b)
			return func(instance string) *Store {
				objects, err := objstore.Open(context.Background(), u)
				if err != nil {
					b.Fatal(err)
				}
				s, err := Create(context.Background(), objects, userSchema, "id", benchOpts(instance))
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
		})
	}
}

// p18GetShards runs the gets on one store per writer count, each store opened by every process
// through the function fresh returns; figures are suffixed with suffix.
func p18GetShards(b *testing.B, suffix string, fresh func(b *testing.B) func(instance string) *Store) {
	const total, generations = 20_000, 128
	payload := strings.Repeat("x", 200)
	ctx := context.Background()
	p99 := map[int]time.Duration{}
	for _, writers := range []int{1, 64} {
		open := fresh(b)
		perGen := total / generations
		ws := make([]*Store, writers)
		for i := range ws {
			ws[i] = open(fmt.Sprintf("writer-%02d", i))
		}
		for g, start := 0, 0; start < total; g, start = g+1, start+perGen {
			w := ws[g%writers]
			rb := payloadRows(min(perGen, total-start), start, payload)
			rec := rb.NewRecordBatch()
			rb.Release()
			if _, err := w.Append(ctx, rec); err != nil {
				b.Fatal(err)
			}
			rec.Release()
			if err := w.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		r := open("reader")
		snap, err := r.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Shards) < writers || snap.PendingGenerations() < generations {
			b.Fatalf("want %d shards and %d generations, have %d and %d", writers, generations, len(snap.Shards), snap.PendingGenerations())
		}
		times := timeRandomGets(b, r, total, rand.NewPCG(18, uint64(writers)))
		p99[writers] = benchfmt.Percentile(times, 99)
		benchfmt.Report(fmt.Sprintf("P18-get-p99-%d-shards%s", writers, suffix), benchfmt.Millis(p99[writers]), "ms",
			fmt.Sprintf("point get, 20k rows in 128 pending generations over %d shards, p99 (p50 %.3f ms)", writers, benchfmt.Millis(benchfmt.Percentile(times, 50))))
		for _, w := range ws {
			_ = w.Close(ctx)
		}
		_ = r.Close(ctx)
	}
	benchfmt.Report("P18-get-p99-64-shards-vs-1"+suffix, float64(p99[64])/float64(p99[1]), "x",
		"point get p99, 64 writers' shards / one writer's, same rows and generations (goal <= 1.5)")
}
