package lsm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/objstore"
)

func benchOpts(instance string) Options {
	return Options{Instance: instance, Allocator: memory.DefaultAllocator, Clock: hlc.New(nil), Budget: budget.New(0, nil)}
}

func benchStore(b *testing.B, dir, instance string) *Store {
	local, err := objstore.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	s, err := Create(context.Background(), local, userSchema, "id", benchOpts(instance))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func payloadRows(n, start int, payload string) *array.RecordBuilder {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, userSchema)
	for i := range n {
		rb.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("row-%07d", start+i))
		rb.Field(1).(*array.Int64Builder).Append(int64(start + i))
		rb.Field(2).(*array.StringBuilder).Append(payload)
	}
	return rb
}

// BenchmarkP2PendingGenerations measures point gets on the same 20,000 rows held in the base
// table (0 pending generations) or spread over 100 or 1,000 pending generations, read by another
// process than the writer.
func BenchmarkP2PendingGenerations(b *testing.B) {
	const total = 20_000
	payload := strings.Repeat("x", 200)
	ctx := context.Background()
	for b.Loop() {
		p99 := map[int]time.Duration{}
		for _, gens := range []int{0, 100, 1000} {
			dir := b.TempDir()
			w := benchStore(b, dir, "writer")
			perGen := total
			if gens > 0 {
				perGen = total / gens
			}
			for start := 0; start < total; start += perGen {
				rb := payloadRows(perGen, start, payload)
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
			if gens == 0 {
				// Compressed, as compaction leaves a base table's rows (P2 compares reads).
				if _, err := w.MergeShard(ctx, w.Shard(), MergeOptions{MaxGenerations: -1, MaxBytes: -1, UncompressedBelowRows: -1}); err != nil {
					b.Fatal(err)
				}
				if _, err := w.tbl.BuildKeyIndex(ctx); err != nil {
					b.Fatal(err)
				}
			}
			r := benchStore(b, dir, "reader")
			snap, err := r.Snapshot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if snap.PendingGenerations() != gens {
				b.Fatalf("want %d pending generations, have %d", gens, snap.PendingGenerations())
			}
			times := timeRandomGets(b, r, total, rand.NewPCG(1, uint64(gens)))
			p99[gens] = benchfmt.Percentile(times, 99)
			benchfmt.Report(fmt.Sprintf("P2-get-p50-%d", gens), benchfmt.Millis(benchfmt.Percentile(times, 50)), "ms", fmt.Sprintf("point get, 20k rows, %d pending generations, p50", gens))
			benchfmt.Report(fmt.Sprintf("P2-get-p99-%d", gens), benchfmt.Millis(p99[gens]), "ms", fmt.Sprintf("point get, 20k rows, %d pending generations, p99", gens))
			_ = w.Close(ctx)
			_ = r.Close(ctx)
		}
		benchfmt.Report("P2-get-p99-ratio", float64(p99[1000])/float64(p99[0]), "x", "get p99 with 1,000 pending generations / with 0 (goal <= 2; lance-context ~13x at 200)")
	}
}

// BenchmarkA1DurableAppend measures durable append throughput of 1 KB rows (one row per append
// call) with 1, 8 and 64 concurrent appenders on one store, on the local filesystem (fsync'd).
func BenchmarkA1DurableAppend(b *testing.B) {
	payload := strings.Repeat("y", 1000)
	ctx := context.Background()
	for b.Loop() {
		for _, c := range []struct{ appenders, each int }{{1, 300}, {8, 200}, {64, 60}} {
			s := benchStore(b, b.TempDir(), "writer")
			rate, _ := runAppenders(b, s, c.appenders, c.each, payload)
			benchfmt.Report(fmt.Sprintf("A1-append-rows-%d", c.appenders), rate, "rows/s", fmt.Sprintf("durable 1 KB single-row appends, %d concurrent appenders", c.appenders))
			benchfmt.Report(fmt.Sprintf("A1-append-mb-%d", c.appenders), rate*1024/(1<<20), "MB/s", fmt.Sprintf("durable append payload throughput, %d appenders", c.appenders))
			_ = s.Close(ctx)
		}
	}
}

// timeRandomGets times 3,000 point gets of random keys row-0000000..row-<total-1> through r (all
// present), after 300 that warm the caches as a serving worker's are.
func timeRandomGets(b *testing.B, r *Store, total int, src rand.Source) []time.Duration {
	rng := rand.New(src)
	get := func(int) error {
		key := fmt.Sprintf("row-%07d", rng.IntN(total))
		rec, err := r.Get(context.Background(), key, nil)
		if err != nil {
			return err
		}
		if rec == nil {
			return fmt.Errorf("%s not found", key)
		}
		rec.Release()
		return nil
	}
	if _, err := benchfmt.Time(300, get); err != nil {
		b.Fatal(err)
	}
	times, err := benchfmt.Time(3000, get)
	if err != nil {
		b.Fatal(err)
	}
	return times
}
