package benchfmt

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}, {0.1, 1}} {
		if got := Percentile(s, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty samples")
	}
}

func TestSelectedByPrefix(t *testing.T) {
	t.Setenv("STRATA_BENCH", "P5-create")
	if !Selected("P5-create-p99") || Selected("P5-get-p99") {
		t.Error("prefix selection")
	}
	t.Setenv("STRATA_BENCH", "P1")
	if !Selected("P1-get-p50") || Selected("P10-s3-get-p99") || Selected("P13-merge-cpu-per-row") {
		t.Error("a group selects its own figures only")
	}
	for want, ok := range map[string]bool{"R6": true, "R6-unsealed": true, "R6-unsealed-rss-1000-stores": true, "R6-rss": false, "P1": false} {
		t.Setenv("STRATA_BENCH", want)
		if Wanted("R6-unsealed") != ok {
			t.Errorf("Wanted(R6-unsealed) with STRATA_BENCH=%s: want %v", want, ok)
		}
	}
	t.Setenv("STRATA_BENCH", "")
	if !Selected("anything") {
		t.Error("empty selects all")
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 3.14159: "3.14", 1234.5: "1234", 0.012345: "0.0123"} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

// Profiles go into STRATA_BENCH_PROFILE_DIR, made when missing: an allocation profile as of the
// start (.base) and as of the stop, and a CPU profile; without the variable nothing is written.
func TestProfilesAreWrittenIntoTheProfileDirectoryMadeWhenMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles", "p8")
	t.Setenv("STRATA_BENCH_PROFILE_DIR", dir)
	stopAllocs := ProfileAllocs("x.allocs.pb.gz")
	stopCPU := ProfileCPU("x.cpu.pb.gz")
	stopCPU()
	stopAllocs()
	for _, name := range []string{"x.allocs.pb.gz.base", "x.allocs.pb.gz", "x.cpu.pb.gz"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Size() == 0 {
			t.Fatalf("%s: %v (size %v)", name, err, info)
		}
	}

	t.Setenv("STRATA_BENCH_PROFILE_DIR", "")
	ProfileAllocs("y")()
	ProfileCPU("y")()
	if _, err := os.Stat("y"); !os.IsNotExist(err) {
		t.Fatalf("a profile was written without the variable: %v", err)
	}
}
