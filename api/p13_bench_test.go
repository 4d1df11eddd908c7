// P13: the CPU a WAL merge costs per row merged, on rollout rows of ~500 B of text.
package api_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
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
// to the append's CPU per row, and the bytes written per row. Each figure is the median of
// p13Trials such stores, and each measured step starts from a collected heap and ends by
// collecting its own garbage, so that it pays for all of its collection and none of another
// step's (a single trial measured without this varied ±20% here).
func BenchmarkP13MergeCPU(b *testing.B) {
	const rows = 100_000
	// 1,000 texts in turn: rows 1,000 apart share one, far beyond what a page's compression or a
	// dictionary sees, and the generated text does not sit in the heap the merge's garbage
	// collection has to scan.
	texts := p3Texts(1000)
	for b.Loop() {
		var merges, appends, added []float64
		for trial := range p13Trials {
			m := p13Trial(b, texts, rows, trial == p13Trials-1)
			merges, appends, added = append(merges, m.mergeCPU), append(appends, m.appendCPU), append(added, m.bytesAdded)
		}
		benchfmt.Report("P13-merge-cpu-per-row", median(merges), "µs", fmt.Sprintf("process CPU (user + system) to merge 100,000 rollout rows of ~500 B (10%% rewrites) into an indexed 100,000-row table, per row, median of %d stores (goal <= 5)", p13Trials))
		benchfmt.Report("P13-append-cpu-per-row", median(appends), "µs", "process CPU to append (and seal) the same rows in batches of 10,000, per row (median)")
		benchfmt.Report("P13-merge-bytes-per-row", median(added), "B", "Parquet bytes the merge added per row merged")
		if benchfmt.Wanted("P13-small-merge") {
			allocs, bytes := p13SmallMerges(b)
			benchfmt.Report("P13-small-merge-allocs-per-row", allocs, "allocs", "heap allocations per row of 40 small merges (900 rows each, the R6 soak's row shape: one text repeated, so its columns keep dictionaries) into an indexed table")
			benchfmt.Report("P13-small-merge-alloc-bytes-per-row", bytes, "B", "heap bytes allocated per row by the same merges (garbage the collector works through)")
		}
	}
}

// p13SmallMerges merges 40 batches of 900 rows shaped like the R6 soak's (ids from several
// clients, one text repeated, most rollout columns null) into an indexed table one at a time, as
// a worker's sweep merges a busy store, and returns the heap allocations and bytes allocated per
// row merged (the Go allocator backs the Arrow buffers, so they count too).
func p13SmallMerges(b *testing.B) (allocs, bytes float64) {
	const merges, rows = 40, 900
	ctx := context.Background()
	s := p13Store(b, "p13-small")
	defer func() {
		if err := s.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}()
	text := strings.Repeat("soak ", 90)
	var ms runtime.MemStats
	var mallocs, allocated uint64
	for m := range merges + 1 {
		ids, contents := make([]string, rows), make([]string, rows)
		for i := range ids {
			ids[i], contents[i] = fmt.Sprintf("c%d-%d-%d", i%9, m, i), text
		}
		rec := kinds.TextRolloutBatch(memory.DefaultAllocator, ids, contents)
		_, err := s.Append(ctx, rec)
		rec.Release()
		if err == nil {
			err = s.Flush(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
		before, beforeBytes := ms.Mallocs, ms.TotalAlloc
		if _, err := s.Merge(ctx, lsm.MergeOptions{MaxGenerations: -1, MaxBytes: -1}, 1000); err != nil {
			b.Fatal(err)
		}
		if m == 0 { // the first merge creates the table's first fragment and its index: not counted
			if _, err := s.BuildKeyIndex(ctx); err != nil {
				b.Fatal(err)
			}
			continue
		}
		runtime.ReadMemStats(&ms)
		mallocs, allocated = mallocs+ms.Mallocs-before, allocated+ms.TotalAlloc-beforeBytes
	}
	return float64(mallocs) / (merges * rows), float64(allocated) / (merges * rows)
}

// p13Trials is how many stores P13 measures (its figures are their medians).
const p13Trials = 3

// p13Measure is one P13 store's figures, per row merged.
type p13Measure struct {
	mergeCPU, appendCPU float64 // µs
	bytesAdded          float64
}

// p13Store creates an empty rollout store in a fresh directory, its Arrow memory from the Go
// allocator (so that the runtime's allocation counters see it).
func p13Store(b *testing.B, instance string) *lsm.Store {
	local, err := objstore.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s, err := lsm.Create(context.Background(), local, kinds.RolloutSchema, "id", lsm.Options{Instance: instance, Allocator: memory.DefaultAllocator})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// p13Trial measures one store: rows appended, merged and indexed, then rows more (10% rewrites)
// appended and merged, that merge measured. profile writes the measured merge's CPU profile.
func p13Trial(b *testing.B, texts []string, rows int, profile bool) p13Measure {
	const batch = 10_000
	ctx := context.Background()
	s := p13Store(b, "p13")
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
	merge := func() {
		if _, err := s.Merge(ctx, lsm.MergeOptions{MaxGenerations: -1, MaxBytes: -1}, 1000); err != nil {
			b.Fatal(err)
		}
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
	runtime.GC()
	appendCPU := cpuTime()
	load(rows, true)
	runtime.GC() // so does the append
	appendCPU = cpuTime() - appendCPU
	stopProfile := func() {}
	if profile {
		stopProfile = benchfmt.ProfileCPU("p13-merge.cpu.pb.gz")
	}
	mergeCPU := cpuTime()
	merge()
	runtime.GC() // the merge pays for collecting all of its garbage
	mergeCPU = cpuTime() - mergeCPU
	stopProfile()
	after, err := s.TableManifest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
	perRow := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(rows) }
	return p13Measure{mergeCPU: perRow(mergeCPU), appendCPU: perRow(appendCPU), bytesAdded: float64(fragmentBytes(after)-fragmentBytes(before)) / float64(rows)}
}

// median is the middle of values (the mean of the two middle ones for an even count).
func median(values []float64) float64 {
	v := slices.Clone(values)
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
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
