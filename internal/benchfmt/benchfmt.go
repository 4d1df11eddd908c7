// Package benchfmt prints benchmark figures in the one format `make bench` collects:
//
//	BENCH <ID> <value> <unit> <description>
//
// IDs start with a group (P1, P5, ...) followed by '-'; the Go benchmark that measures a group is
// named Benchmark<group>..., so `make bench BENCH=P5` runs only that group and prints only the
// figures whose ID starts with P5. scripts/bench.sh turns the lines into a markdown table.
package benchfmt

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// Selected reports whether the figure id is wanted by STRATA_BENCH: empty selects every figure,
// a group (no '-': "P1") that group's figures only (not P10's or P13's), anything else is an ID
// prefix ("P5-create").
func Selected(id string) bool {
	want := os.Getenv("STRATA_BENCH")
	if want != "" && !strings.Contains(want, "-") {
		return strings.HasPrefix(id, want+"-")
	}
	return strings.HasPrefix(id, want)
}

// Report prints one figure when it is selected. Descriptions are one line.
func Report(id string, value float64, unit, description string) {
	if !Selected(id) {
		return
	}
	fmt.Printf("BENCH %s %s %s %s\n", id, formatValue(value), unit, strings.ReplaceAll(description, "\n", " "))
}

// Wanted reports whether any figure whose ID starts with prefix may be selected: a benchmark
// guards work that only such figures need with it ("R6-unsealed" is wanted by "R6",
// "R6-unsealed" and "R6-unsealed-rss-1000-stores" alike).
func Wanted(prefix string) bool {
	return Selected(prefix) || strings.HasPrefix(os.Getenv("STRATA_BENCH"), prefix)
}

func formatValue(v float64) string {
	if v >= 100 || v <= -100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// BestOf runs fn n times and returns the shortest run (for single-threaded work, its CPU time
// with the least interference from the rest of the machine).
func BestOf(n int, fn func()) time.Duration {
	best := time.Duration(1 << 62)
	for range n {
		start := time.Now()
		fn()
		best = min(best, time.Since(start))
	}
	return best
}

// Millis converts a duration to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Percentile returns the p-th percentile (0 < p <= 100) of samples by the nearest-rank method.
func Percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// Time runs fn n times and returns each run's duration; it stops at the first error.
func Time(n int, fn func(i int) error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := fn(i); err != nil {
			return out, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// profileDir is STRATA_BENCH_PROFILE_DIR, created when missing ("": unset, or it cannot be made).
func profileDir() string {
	dir := os.Getenv("STRATA_BENCH_PROFILE_DIR")
	if dir == "" || os.MkdirAll(dir, 0o755) != nil {
		return ""
	}
	return dir
}

// ProfileCPU starts a CPU profile of this process to STRATA_BENCH_PROFILE_DIR/name when that is
// set, so a figure's hot path can be read alone (go tool pprof -top BINARY FILE); the returned
// function stops it. Without the variable, or when a profile is already running (go test
// -cpuprofile), it does nothing.
func ProfileCPU(name string) (stop func()) {
	dir := profileDir()
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name()) // no empty profile left behind
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// ProfileAllocs writes this process's allocation profile to STRATA_BENCH_PROFILE_DIR/name.base
// now and to STRATA_BENCH_PROFILE_DIR/name when the returned function is called, so what one phase
// allocates can be read alone (go tool pprof -sample_index=alloc_space -base NAME.base NAME).
// Without the variable it does nothing.
func ProfileAllocs(name string) (stop func()) {
	dir := profileDir()
	if dir == "" {
		return func() {}
	}
	write := func(path string) {
		f, err := os.Create(path)
		if err != nil {
			return
		}
		_ = pprof.Lookup("allocs").WriteTo(f, 0)
		_ = f.Close()
	}
	runtime.GC() // the profile is as of the last collection; bring it up to now
	write(filepath.Join(dir, name+".base"))
	return func() {
		runtime.GC()
		write(filepath.Join(dir, name))
	}
}
