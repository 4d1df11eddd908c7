// Package memlimit keeps the Go runtime's soft memory limit at what the process's memory budgets
// hold, plus a fixed headroom: the garbage collector then works to keep the heap near what is
// live instead of letting it grow to twice that (GOGC=100), so a worker's RSS follows its
// budgets (write buffer, object cache, merge and request memory) rather than its workload.
//
// The limit is never below GrowthFactor times the heap that was live after the last collection
// (memory no budget counts — scan pages, key-index pages, runtime structures — still gets room,
// so the collector never runs back to back), and never above the limit the process started with
// (GOMEMLIMIT, when set). A Governor owns one goroutine, stopped and waited for by Stop, which
// also restores the starting limit.
package memlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config tunes a Governor.
type Config struct {
	// Headroom is what the heap may hold beyond what the budgets count (garbage between
	// collections, memory no budget counts). <= 0 disables the governor.
	Headroom int64
	// GrowthFactor bounds the limit from below by this multiple of the last live heap
	// (default 1.15).
	GrowthFactor float64
	// Interval between updates (default 100ms).
	Interval time.Duration
}

// Governor updates the soft memory limit from its sources. A nil *Governor does nothing.
type Governor struct {
	cfg     Config
	ceiling int64 // the limit the process started with (math.MaxInt64: none)

	mu      sync.Mutex // guards sources
	sources []func() int64

	limit   prometheus.Gauge
	samples []metrics.Sample
	quit    chan struct{}
	done    chan struct{}
}

// Start starts a governor (nil when cfg.Headroom <= 0); register its gauge with reg (when not
// nil). Sources are added with Track. The soft limit is process-wide: start at most one governor
// per process (`strata serve`, `worker` and `dev` each open one runtime).
func Start(cfg Config, reg prometheus.Registerer) *Governor {
	if cfg.Headroom <= 0 {
		return nil
	}
	if cfg.GrowthFactor < 1 {
		cfg.GrowthFactor = 1.15
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	g := &Governor{cfg: cfg, ceiling: debug.SetMemoryLimit(-1),
		limit: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_memory_soft_limit_bytes",
			Help: "The Go runtime's soft memory limit as the memory governor last set it: budgeted bytes in use plus headroom."}),
		samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"},
			{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
			{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}},
		quit: make(chan struct{}), done: make(chan struct{})}
	if reg != nil {
		reg.MustRegister(g.limit)
	}
	g.update()
	go g.run()
	return g
}

// Track adds a source: bytes a budget holds right now (unsealed rows, cached objects, reserved
// merge memory, request bodies in flight).
func (g *Governor) Track(source func() int64) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.sources = append(g.sources, source)
	g.mu.Unlock()
}

// Stop ends the updates and restores the limit the process started with.
func (g *Governor) Stop() {
	if g == nil {
		return
	}
	close(g.quit)
	<-g.done
	debug.SetMemoryLimit(g.ceiling)
}

func (g *Governor) run() {
	defer close(g.done)
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-g.quit:
			return
		case <-t.C:
			g.update()
		}
	}
}

// update sets the limit to what the budgets hold + the runtime's own (non-heap) memory +
// headroom, at least GrowthFactor x the live heap, at most the starting limit.
func (g *Governor) update() {
	g.mu.Lock()
	var budgeted int64
	for _, s := range g.sources {
		budgeted += max(s(), 0)
	}
	g.mu.Unlock()
	metrics.Read(g.samples)
	live := int64(g.samples[0].Value.Uint64())
	nonHeap := int64(g.samples[1].Value.Uint64()) - int64(g.samples[2].Value.Uint64()) - int64(g.samples[3].Value.Uint64()) -
		int64(g.samples[4].Value.Uint64()) - int64(g.samples[5].Value.Uint64())
	limit := Limit(budgeted, live, max(nonHeap, 0), g.cfg.Headroom, g.cfg.GrowthFactor, g.ceiling)
	if diff := limit - debug.SetMemoryLimit(-1); diff > 1<<20 || diff < -1<<20 {
		debug.SetMemoryLimit(limit)
	}
	g.limit.Set(float64(limit))
}

// Limit is the soft limit for budgeted bytes in use, the live heap and the runtime's non-heap
// memory: budgeted + nonHeap + headroom, at least growth x live + nonHeap, at most ceiling.
func Limit(budgeted, live, nonHeap, headroom int64, growth float64, ceiling int64) int64 {
	limit := budgeted + nonHeap + headroom
	if floor := float64(live)*growth + float64(nonHeap); floor > float64(limit) {
		limit = int64(math.Ceil(min(floor, math.MaxInt64/2)))
	}
	return min(limit, ceiling)
}
