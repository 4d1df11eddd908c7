package cache

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

func TestTheCacheStaysWithinItsBytesEvictingTheLeastRecentlyUsed(t *testing.T) {
	c := New(10_000, nil)
	ns := c.Namespace()
	for i := range 1000 {
		Add(ns, "footer", fmt.Sprint(i), i, 500)
		require.LessOrEqual(t, c.Bytes(), c.Limit())
	}
	require.Positive(t, testutil.ToFloat64(c.evictions.WithLabelValues("footer")))
	// The most recent keys are still there; the oldest are gone.
	v, ok := Get[int](ns, "footer", "999")
	require.True(t, ok)
	require.Equal(t, 999, v)
	_, ok = Get[int](ns, "footer", "0")
	require.False(t, ok)
	// A value larger than half the cache is not cached at all.
	Add(ns, "footer", "huge", 1, 1<<20)
	_, ok = Get[int](ns, "footer", "huge")
	require.False(t, ok)
}

func TestNamespacesDoNotShareKeys(t *testing.T) {
	c := New(1<<20, nil)
	a, b := c.Namespace(), c.Namespace()
	Add(a, "manifest", "v/1", "a's", 10)
	_, ok := Get[string](b, "manifest", "v/1")
	require.False(t, ok)
	v, _ := Get[string](a, "manifest", "v/1")
	require.Equal(t, "a's", v)
	Remove(a, "v/1")
	_, ok = Get[string](a, "manifest", "v/1")
	require.False(t, ok)
	require.Zero(t, c.Bytes())
	// Replacing a key replaces its cost.
	Add(a, "manifest", "k", 1, 1000)
	Add(a, "manifest", "k", 2, 100)
	require.Less(t, c.Bytes(), int64(1000))
}

// Removing an object removes what was cached from its parts (OBJECT#PART), in its namespace
// only; an evicted part leaves no trace behind.
func TestRemovingAnObjectRemovesItsParts(t *testing.T) {
	c := New(1<<20, nil)
	a, b := c.Namespace(), c.Namespace()
	for _, ns := range []Namespace{a, b} {
		Add(ns, "footer", "run/1", "footer", 100)
		Add(ns, "index_page", "run/1#0", "page 0", 100)
		Add(ns, "index_page", "run/1#4096", "page 1", 100)
		Add(ns, "index_page", "run/10#0", "another run's page", 100)
	}
	Add(a, "object", "run/2#0+10", "a part whose object was never cached", 100)
	Remove(a, "run/1")
	for _, key := range []string{"run/1", "run/1#0", "run/1#4096"} {
		_, ok := Get[string](a, "any", key)
		require.False(t, ok, key)
		_, ok = Get[string](b, "any", key)
		require.True(t, ok, "the other namespace keeps %s", key)
	}
	_, ok := Get[string](a, "any", "run/10#0")
	require.True(t, ok, "a key that only shares a prefix is not a part")
	Remove(a, "run/2")
	_, ok = Get[string](a, "any", "run/2#0+10")
	require.False(t, ok)
	Remove(a, "run/10")
	Remove(b, "run/1")
	Remove(b, "run/10")
	require.Zero(t, c.Bytes())
	require.Empty(t, c.parts)
	require.Empty(t, c.items)

	// Parts evicted one by one leave no owner entry behind.
	small := New(2000, nil)
	ns := small.Namespace()
	for i := range 100 {
		Add(ns, "index_page", fmt.Sprintf("run/%d#0", i), i, 200)
	}
	small.mu.Lock()
	require.Len(t, small.parts, len(small.items))
	small.mu.Unlock()
}

func TestANilCacheCachesNothing(t *testing.T) {
	var c *Cache
	require.Nil(t, New(0, nil))
	ns := c.Namespace()
	Add(ns, "keys", "k", 1, 1)
	_, ok := Get[int](ns, "keys", "k")
	require.False(t, ok)
	Remove(ns, "k")
	require.Zero(t, c.Bytes())
}

func TestConcurrentUseAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := New(1<<20, reg)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := c.Namespace()
			for i := range 2000 {
				Add(ns, "index", fmt.Sprint(i%300), i, int64(100+g))
				_, _ = Get[int](ns, "index", fmt.Sprint((i*7)%300))
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, c.Bytes(), c.Limit())
	problems, err := promlint.NewWithMetricFamilies(mustGather(t, reg)).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
}

func mustGather(t *testing.T, reg *prometheus.Registry) []*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	return mfs
}

// Replacing a key while others read it is safe (run under -race).
func TestReplacingAKeyWhileItIsRead(t *testing.T) {
	c := New(1<<20, nil)
	ns := c.Namespace()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				if g%2 == 0 {
					Add(ns, "manifest", "k", i, 100)
				} else {
					_, _ = Get[int](ns, "manifest", "k")
				}
			}
		}()
	}
	wg.Wait()
}

// What the cache holds is reported by kind (strata_cache_bytes{kind}), and the kinds sum to its
// bytes through additions, replacements (of another kind, too), evictions and removals.
func TestTheCacheReportsItsBytesByKind(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := New(100_000, reg)
	ns := c.Namespace()
	sum := func() int64 {
		var n int64
		for _, v := range c.BytesByKind() {
			n += v
		}
		return n
	}
	for i := range 400 {
		Add(ns, []string{"footer", "index", "index_page"}[i%3], fmt.Sprint(i%250), i, int64(100+i))
		require.Equal(t, c.Bytes(), sum())
	}
	Remove(ns, "7")
	require.Equal(t, c.Bytes(), sum())
	Add(ns, "manifest", "m", 1, 5000)
	byKind := c.BytesByKind()
	require.Equal(t, int64(5000+len("m")+64), byKind["manifest"]) // the cost, its key and its entry
	gauge := map[string]float64{}
	for _, mf := range mustGather(t, reg) {
		if mf.GetName() == "strata_cache_bytes" {
			for _, m := range mf.GetMetric() {
				gauge[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	require.Len(t, gauge, len(byKind))
	for kind, n := range byKind {
		require.Equal(t, float64(n), gauge[kind], kind)
	}
	for i := range 250 {
		Remove(ns, fmt.Sprint(i))
	}
	Remove(ns, "m")
	require.Empty(t, c.BytesByKind(), "nothing cached, no kind left")
}

// Lookups are counted by kind, hits and misses apart, whatever the key's length (one longer than
// the stack buffer a lookup builds its key in is found the same).
func TestLookupsAreCountedByKind(t *testing.T) {
	c := New(1<<20, nil)
	ns := c.Namespace()
	long := strings.Repeat("k", 2*keyBufferBytes)
	Add(ns, "footer", "f", 1, 10)
	Add(ns, "manifest", long, 2, 10)
	for range 3 {
		_, ok := Get[int](ns, "footer", "f")
		require.True(t, ok)
	}
	v, ok := Get[int](ns, "manifest", long)
	require.True(t, ok)
	require.Equal(t, 2, v)
	_, ok = Get[int](ns, "manifest", long[1:])
	require.False(t, ok)
	_, ok = Get[int](ns, "footer", "missing")
	require.False(t, ok)
	for kind, want := range map[string][2]float64{"footer": {3, 1}, "manifest": {1, 1}} {
		require.Equal(t, want[0], testutil.ToFloat64(c.hits.WithLabelValues(kind)), kind)
		require.Equal(t, want[1], testutil.ToFloat64(c.misses.WithLabelValues(kind)), kind)
	}
}
