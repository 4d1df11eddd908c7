// MemWAL metrics. No per-store or per-shard labels.
package memwal

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the MemWAL's Prometheus collectors; share one set per process.
type Metrics struct {
	appends             prometheus.Counter
	rowsAppended        prometheus.Counter
	walEntries          prometheus.Counter
	walSegments         prometheus.Counter
	seals               *prometheus.CounterVec
	pendingPerRead      prometheus.Histogram
	readsRefused        prometheus.Counter
	appendsRefused      prometheus.Counter
	merges              *prometheus.CounterVec
	generationsMerged   prometheus.Counter
	rowsMerged          prometheus.Counter
	mergeDuration       prometheus.Histogram
	generationsRejected prometheus.Counter
	readsResnapshotted  prometheus.Counter
	walGarbage          *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		appends:      prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_appends_total", Help: "Appends acknowledged (durable in the WAL)."}),
		rowsAppended: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_rows_appended_total", Help: "Rows acknowledged by appends."}),
		walEntries:   prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_entries_written_total", Help: "WAL entries written (one per group commit)."}),
		walSegments:  prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_segments_created_total", Help: "WAL segment files started (group commits are appended to segments when the object store writes in place)."}),
		seals:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_wal_seals_total", Help: "Memtable seals, by outcome."}, []string{"outcome"}),
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
		walGarbage:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_wal_garbage_deletes_total", Help: "Deletions of WAL objects nothing needs any more (entries, segments, generation files, old shard manifests), by outcome (deleted, error); what fails is retried by the next sweep."}, []string{"outcome"}),
		readsResnapshotted:  prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_read_resnapshots_total", Help: "Reads started again on a fresh snapshot because a merge deleted a pending generation's objects while they read."}),
	}
	if reg != nil {
		reg.MustRegister(m.appends, m.rowsAppended, m.walEntries, m.walSegments, m.seals, m.pendingPerRead, m.readsRefused,
			m.appendsRefused, m.merges, m.generationsMerged, m.rowsMerged, m.mergeDuration, m.generationsRejected, m.readsResnapshotted, m.walGarbage)
	}
	return m
}
