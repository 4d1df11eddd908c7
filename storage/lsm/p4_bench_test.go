package lsm

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/shard"
)

const (
	p4Stores  = 24
	p4Budget  = 512 << 20
	p4WantMiB = 256
)

// BenchmarkP4MergeMemory: one process runs 24 concurrent WAL merges (24 stores, each with about
// 256 MiB of merge work pending) under a 512 MiB merge budget; the figure is the process's peak
// RSS above the budget. The merges run in a child process so its peak RSS is theirs alone.
func BenchmarkP4MergeMemory(b *testing.B) {
	for b.Loop() {
		root := b.TempDir()
		template := filepath.Join(root, "template")
		w := benchStore(b, template, "writer")
		// About 90 MiB of 1 KB rows in one shard, sealed into generations of <= 32 MiB.
		w.opts.Writer.SealBytes = 32 << 20
		payload := strings.Repeat("z", 1000)
		for start := 0; start < 90_000; start += 5000 {
			rb := payloadRows(5000, start, payload)
			rec := rb.NewRecordBatch()
			rb.Release()
			if _, err := w.Append(context.Background(), rec); err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
		if err := w.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		for i := range p4Stores {
			if err := linkTree(template, filepath.Join(root, fmt.Sprintf("store-%02d", i))); err != nil {
				b.Fatal(err)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestP4Child$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRATA_P4_ROOT="+root)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		var peakKiB, merged int64
		for line := range strings.Lines(string(out)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "P4 peak_kib "); ok {
				f := strings.Fields(v)
				peakKiB, _ = strconv.ParseInt(f[0], 10, 64)
				merged, _ = strconv.ParseInt(f[2], 10, 64)
			}
		}
		if peakKiB == 0 || merged != p4Stores {
			b.Fatalf("child did not report (merged %d):\n%s", merged, out)
		}
		peakMiB := float64(peakKiB) / 1024
		benchfmt.Report("P4-rss-peak", peakMiB, "MiB", "peak RSS of 24 concurrent merges wanting 256 MiB each, 512 MiB budget")
		benchfmt.Report("P4-rss-over-budget", peakMiB-float64(p4Budget>>20), "MiB", "peak RSS above the 512 MiB merge budget (goal <= 256)")
	}
}

// TestP4Child is the child half of BenchmarkP4MergeMemory (skipped unless the benchmark runs it).
func TestP4Child(t *testing.T) {
	root := os.Getenv("STRATA_P4_ROOT")
	if root == "" {
		t.Skip("run by BenchmarkP4MergeMemory")
	}
	// Run as a worker should: the Go heap is told the process's memory limit (GOMEMLIMIT), so
	// garbage is collected before the heap doubles past the live merge data.
	debug.SetMemoryLimit(p4Budget + 128<<20)
	shared := budget.New(p4Budget, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	merged := 0
	for i := range p4Stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local, err := objstore.NewLocal(filepath.Join(root, fmt.Sprintf("store-%02d", i)))
			if err != nil {
				t.Error(err)
				return
			}
			o := benchOpts(fmt.Sprintf("merger-%d", i))
			o.Budget = shared
			s, err := Open(context.Background(), local, o)
			if err != nil {
				t.Error(err)
				return
			}
			res, err := s.MergeShard(context.Background(), shard.ShardID("writer"), MergeOptions{MaxGenerations: -1, MaxBytes: p4WantMiB << 20})
			if err != nil {
				t.Error(err)
				return
			}
			if res.Generations > 0 {
				mu.Lock()
				merged++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("P4 peak_kib %d merged %d\n", vmHWM(t), merged)
}

func vmHWM(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

// linkTree recreates src under dst with hard links (the stores share their immutable files).
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return os.Link(p, target)
	})
}
