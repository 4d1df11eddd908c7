// The Temporal SDK's own metrics (workflow and activity task latencies, polls, failures, request
// counts, sticky cache, ...) on Strata's Prometheus registry: a client.MetricsHandler that turns
// each SDK counter, gauge and timer into a Prometheus counter, gauge or histogram named
// strata_temporal_<sdk name> (counters end in _total, timers are histograms in seconds).
//
// Prometheus needs one label set per metric; the SDK's tags for a metric name are the same on
// every use, so the first use fixes them (a later use with other tags fills missing ones with ""
// and drops extra ones). The tags are namespace, task queue, worker, workflow and activity types,
// operation names: a handful of values each, never a store.
package worker

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// sdkMetricPrefix is prepended to the SDK's metric names (which start with "temporal_").
const sdkMetricPrefix = "strata_"

// SDKMetrics is a client.MetricsHandler exporting to a Prometheus registry.
type SDKMetrics struct {
	reg  *sdkRegistry
	tags map[string]string
}

type sdkRegistry struct {
	reg        prometheus.Registerer
	mu         sync.Mutex // guards the maps
	counters   map[string]*labelled[*prometheus.CounterVec]
	gauges     map[string]*labelled[*prometheus.GaugeVec]
	histograms map[string]*labelled[*prometheus.HistogramVec]
}

// labelled is a metric vector and the label names its first use fixed.
type labelled[V any] struct {
	vec    V
	labels []string
	ok     bool // registered (a name another collector owns stays unexported)
}

// NewSDKMetrics returns a handler registering the SDK's metrics with reg.
func NewSDKMetrics(reg prometheus.Registerer) *SDKMetrics {
	return &SDKMetrics{reg: &sdkRegistry{reg: reg, counters: map[string]*labelled[*prometheus.CounterVec]{},
		gauges: map[string]*labelled[*prometheus.GaugeVec]{}, histograms: map[string]*labelled[*prometheus.HistogramVec]{}}}
}

var _ client.MetricsHandler = (*SDKMetrics)(nil)

// WithTags returns a handler whose metrics carry tags too (overriding same-named ones).
func (m *SDKMetrics) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(m.tags)+len(tags))
	for k, v := range m.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return &SDKMetrics{reg: m.reg, tags: merged}
}

// vecFor returns the vector registered for name in vecs, creating (and registering) it with the
// handler's tags as its labels on first use; ok is false when the registry refused it.
func vecFor[V prometheus.Collector](m *SDKMetrics, vecs map[string]*labelled[V], name string, create func(labels []string) V) (*labelled[V], bool) {
	r := m.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := vecs[name]
	if !ok {
		labels := labelNames(m.tags)
		vec := create(labels)
		l = &labelled[V]{vec: vec, labels: labels, ok: r.reg.Register(vec) == nil}
		vecs[name] = l
	}
	return l, l.ok
}

// Counter returns the counter name (exported as a Prometheus counter ending in _total).
func (m *SDKMetrics) Counter(name string) client.MetricsCounter {
	l, ok := vecFor(m, m.reg.counters, name, func(labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricName(name, "_total"), Help: "Temporal SDK counter " + name + "."}, labels)
	})
	if !ok {
		return client.MetricsNopHandler.Counter(name)
	}
	c := l.vec.WithLabelValues(labelValues(l.labels, m.tags)...)
	return counterFunc(func(n int64) { c.Add(float64(n)) })
}

// Gauge returns the gauge name.
func (m *SDKMetrics) Gauge(name string) client.MetricsGauge {
	l, ok := vecFor(m, m.reg.gauges, name, func(labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricName(name, ""), Help: "Temporal SDK gauge " + name + "."}, labels)
	})
	if !ok {
		return client.MetricsNopHandler.Gauge(name)
	}
	return gaugeFunc(l.vec.WithLabelValues(labelValues(l.labels, m.tags)...).Set)
}

// Timer returns the timer name (exported as a histogram in seconds).
func (m *SDKMetrics) Timer(name string) client.MetricsTimer {
	l, ok := vecFor(m, m.reg.histograms, name, func(labels []string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricName(name, "_seconds"), Help: "Temporal SDK timer " + name + ".",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, labels)
	})
	if !ok {
		return client.MetricsNopHandler.Timer(name)
	}
	h := l.vec.WithLabelValues(labelValues(l.labels, m.tags)...)
	return timerFunc(func(d time.Duration) { h.Observe(d.Seconds()) })
}

type counterFunc func(int64)

func (f counterFunc) Inc(n int64) { f(n) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

// metricName is the Prometheus name of an SDK metric: prefixed, characters Prometheus does not
// take replaced, with suffix unless it ends with it already.
func metricName(name, suffix string) string {
	n := sdkMetricPrefix + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
	if !strings.HasSuffix(n, suffix) {
		n += suffix
	}
	return n
}

func labelNames(tags map[string]string) []string {
	names := make([]string, 0, len(tags))
	for k := range tags {
		names = append(names, metricName(k, "")[len(sdkMetricPrefix):])
	}
	sort.Strings(names)
	return names
}

func labelValues(labels []string, tags map[string]string) []string {
	byLabel := make(map[string]string, len(tags))
	for k, v := range tags {
		byLabel[metricName(k, "")[len(sdkMetricPrefix):]] = v
	}
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = byLabel[l]
	}
	return out
}
