// P13: the CPU a WAL merge costs per row merged, on rollout rows of ~500 B of text.
package api_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// BenchmarkP13MergeCPU appends 100,000 rollout rows, merges and indexes them, then appends
// another 100,000 (10% rewriting earlier ids) and measures the process CPU time (user + system,
// garbage collection included) of merging those into the indexed table: µs per row merged, next
// to the append's CPU per row, and the bytes written per row.
func BenchmarkP13MergeCPU(b *testing.B) {
	const rows, batch = 100_000, 10_000
	ctx := context.Background()
	// 1,000 texts in turn: rows 1,000 apart share one, far beyond what a page's compression or a
	// dictionary sees, and the generated text does not sit in the heap the merge's garbage
	// collection has to scan.
	texts := p3Texts(1000)
	for b.Loop() {
		local, err := objstore.NewLocal(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		s, err := lsm.Create(ctx, local, kinds.RolloutSchema, "id", lsm.Options{Instance: "p13", Allocator: memory.DefaultAllocator})
		if err != nil {
			b.Fatal(err)
		}
		load := func(first int, rewrite bool) {
			for start := 0; start < rows; start += batch {
				ids, contents := make([]string, batch), make([]string, batch)
				for i := range ids {
					n := first + start + i
					if rewrite && i%10 == 0 {
						n = (start + i) / 2 // an earlier row
					}
					ids[i], contents[i] = fmt.Sprintf("p13-%08d", n), texts[n%len(texts)][:500]
				}
				rec := kinds.TextRolloutBatch(memory.DefaultAllocator, ids, contents)
				if _, err := s.Append(ctx, rec); err != nil {
					b.Fatal(err)
				}
				rec.Release()
			}
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		merge := func() lsm.MergeSummary {
			sum, err := s.Merge(ctx, lsm.MergeOptions{MaxGenerations: -1, MaxBytes: -1}, 1000)
			if err != nil {
				b.Fatal(err)
			}
			return sum
		}
		load(0, false)
		merge()
		if _, err := s.BuildKeyIndex(ctx); err != nil {
			b.Fatal(err)
		}
		before, err := s.TableManifest(ctx)
		if err != nil {
			b.Fatal(err)
		}
		appendCPU := cpuTime()
		load(rows, true)
		appendCPU = cpuTime() - appendCPU
		stopProfile := benchfmt.ProfileCPU("p13-merge.cpu.pb.gz")
		mergeCPU := cpuTime()
		merge()
		mergeCPU = cpuTime() - mergeCPU
		stopProfile()
		after, err := s.TableManifest(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(ctx); err != nil {
			b.Fatal(err)
		}
		perRow := func(d time.Duration) float64 { return float64(d.Microseconds()) / rows }
		benchfmt.Report("P13-merge-cpu-per-row", perRow(mergeCPU), "µs", "process CPU (user + system) to merge 100,000 rollout rows of ~500 B (10% rewrites) into an indexed 100,000-row table, per row (goal <= 5)")
		benchfmt.Report("P13-append-cpu-per-row", perRow(appendCPU), "µs", "process CPU to append (and seal) the same rows in batches of 10,000, per row")
		benchfmt.Report("P13-merge-bytes-per-row", float64(fragmentBytes(after)-fragmentBytes(before))/rows, "B", "Parquet bytes the merge added per row merged")
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fragmentBytes(m *table.Manifest) int64 {
	var n int64
	for _, f := range m.Fragments {
		n += f.Bytes
	}
	return n
}
