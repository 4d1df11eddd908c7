// Shard writer metrics (appends, group commits, seals; WAL garbage is counted by the deleter,
// strata_deletes_total). No per-store or per-shard labels. Read and merge metrics live with the store (lsm).
package shard

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the shard writers' Prometheus collectors; share one set per process.
type Metrics struct {
	appends      prometheus.Counter
	rowsAppended prometheus.Counter
	walEntries   prometheus.Counter
	walSegments  prometheus.Counter
	seals        *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		appends:      prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_appends_total", Help: "Appends acknowledged (durable in the WAL)."}),
		rowsAppended: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_rows_appended_total", Help: "Rows acknowledged by appends."}),
		walEntries:   prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_entries_written_total", Help: "WAL entries written (one per group commit)."}),
		walSegments:  prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_segments_created_total", Help: "WAL segment files started (group commits are appended to segments when the object store writes in place)."}),
		seals:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_wal_seals_total", Help: "Memtable seals, by outcome."}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.appends, m.rowsAppended, m.walEntries, m.walSegments, m.seals)
	}
	return m
}
