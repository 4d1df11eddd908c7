// Table metrics. No per-table labels: the number of tables is unbounded.
package table

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the table layer's Prometheus collectors.
type Metrics struct {
	commits         *prometheus.CounterVec
	commitConflicts *prometheus.CounterVec
	// UnindexedKeyScans counts upserts and lookups that had to scan the key column of fragments
	// the key index does not cover (the fallback index-before-merge avoids).
	UnindexedKeyScans prometheus.Counter
	rowsUpserted      prometheus.Counter
	staleRowsSkipped  prometheus.Counter
}

// NewMetrics creates the collectors and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_table_commits_total", Help: "Table versions committed, by operation.",
		}, []string{"operation"}),
		commitConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_table_commit_conflicts_total", Help: "Commits that lost the race for a version and re-prepared, by operation.",
		}, []string{"operation"}),
		UnindexedKeyScans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_table_unindexed_key_scans_total",
			Help: "Upserts and lookups that scanned the key column of fragments the key index does not cover.",
		}),
		rowsUpserted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_table_rows_upserted_total", Help: "Rows written by upserts (after newest-wins).",
		}),
		staleRowsSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_table_stale_rows_skipped_total", Help: "Upserted rows dropped because the table held a newer _seq for their key.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.commits, m.commitConflicts, m.UnindexedKeyScans, m.rowsUpserted, m.staleRowsSkipped)
	}
	return m
}
