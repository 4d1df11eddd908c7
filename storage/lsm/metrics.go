// Store read and merge metrics (shard writer metrics: shard.Metrics). No per-store or per-shard
// labels.
package lsm

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-store/strata/storage/shard"
)

// Metrics are the stores' Prometheus collectors; share one set per process.
type Metrics struct {
	Shard               *shard.Metrics // the shard writers'
	pendingPerRead      prometheus.Histogram
	readsRefused        prometheus.Counter
	appendsRefused      prometheus.Counter
	merges              *prometheus.CounterVec
	generationsMerged   prometheus.Counter
	rowsMerged          prometheus.Counter
	mergeDuration       prometheus.Histogram
	generationsRejected prometheus.Counter
	readsResnapshotted  prometheus.Counter
}

// NewMetrics creates the collectors and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Shard: shard.NewMetrics(reg),
		pendingPerRead: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "strata_wal_pending_generations_per_read", Help: "Sealed, unmerged generations a read had to consider.",
			Buckets: []float64{0, 1, 4, 16, 64, 256, 1024, 4096, 16384},
		}),
		readsRefused:      prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_reads_refused_total", Help: "Reads refused because a shard had more pending generations than the hard cap."}),
		appendsRefused:    prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_appends_refused_total", Help: "Appends refused by pending-generation backpressure."}),
		merges:            prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_wal_merges_total", Help: "WAL merges, by outcome."}, []string{"outcome"}),
		generationsMerged: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_generations_merged_total", Help: "Generations folded into base tables."}),
		rowsMerged:        prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_rows_merged_total", Help: "Rows folded into base tables (before newest-wins)."}),
		mergeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "strata_wal_merge_duration_seconds", Help: "Duration of WAL merges that committed.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		generationsRejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_generations_skipped_total", Help: "Generations a read skipped because their rows were already merged."}),
		readsResnapshotted:  prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_read_resnapshots_total", Help: "Reads started again on a fresh snapshot because a merge deleted a pending generation's objects while they read."}),
	}
	if reg != nil {
		reg.MustRegister(m.pendingPerRead, m.readsRefused,
			m.appendsRefused, m.merges, m.generationsMerged, m.rowsMerged, m.mergeDuration, m.generationsRejected, m.readsResnapshotted)
	}
	return m
}
