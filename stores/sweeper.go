// The flush sweeper: one process-wide loop that seals every resident store of every kind on an
// interval (never a timer per store, lance-context #136), concurrently so a slow store never
// delays another (#256), each store bounded by max(5 x interval, 30 s) (#133). After sealing it
// reports the shards' pending work to the catalog in one batch; a slow or unreachable PostgreSQL
// delays only that report, never appends or reads.
package stores

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/strata-store/strata/catalog"
)

// SweeperMetrics count flush outcomes.
type SweeperMetrics struct {
	flushes *prometheus.CounterVec
}

// NewSweeperMetrics registers the sweeper's metrics with reg (when not nil).
func NewSweeperMetrics(reg prometheus.Registerer) *SweeperMetrics {
	m := &SweeperMetrics{flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_flushes_total", Help: "Flush sweeper seals of resident stores, by outcome (sealed, idle, error, timeout).",
	}, []string{"outcome"})}
	if reg != nil {
		reg.MustRegister(m.flushes)
	}
	return m
}

// sweepConcurrency bounds how many stores one pass seals at once.
const sweepConcurrency = 16

// RunFlushSweeper seals resident stores every interval until ctx is done.
func (m *Manager) RunFlushSweeper(ctx context.Context, interval time.Duration, metrics *SweeperMetrics) {
	if interval <= 0 {
		m.log.Warn("flush sweeper disabled: appended rows stay invisible to other workers until a flush")
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.FlushPass(ctx, interval, metrics)
		}
	}
}

// FlushPass seals every resident store once and reports shard stats.
func (m *Manager) FlushPass(ctx context.Context, interval time.Duration, metrics *SweeperMetrics) {
	hs, release := m.residentStores()
	defer release()
	perStore := max(5*interval, 30*time.Second)
	sem := semaphore.NewWeighted(sweepConcurrency)
	var mu sync.Mutex
	var stats []catalog.ShardStats
	var wg sync.WaitGroup
	for _, h := range hs {
		if err := sem.Acquire(ctx, 1); err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sem.Release(1)
			sctx, cancel := context.WithTimeout(ctx, perStore)
			defer cancel()
			sealed, err := h.store.SealIfDue(sctx, 0)
			outcome := "idle"
			switch {
			case sctx.Err() == context.DeadlineExceeded:
				outcome = "timeout"
			case err != nil:
				outcome = "error"
				m.log.Warn("flush failed", "kind", h.kind, "name", h.name, "err", err)
			case sealed:
				outcome = "sealed"
			}
			if metrics != nil {
				metrics.flushes.WithLabelValues(outcome).Inc()
			}
			if !sealed || err != nil {
				return
			}
			st, ok, err := h.store.OwnShardState(sctx)
			if err != nil || !ok {
				return
			}
			mu.Lock()
			stats = append(stats, catalog.ShardStats{Kind: h.kind, Name: h.name, Shard: st.Shard,
				PendingGenerations: st.PendingGenerations, PendingRows: st.PendingRows, PendingBytes: st.PendingBytes,
				OldestPendingAt: st.OldestPendingAt})
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(stats) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.cat.UpsertShardStats(rctx, stats); err != nil {
		m.log.Warn("reporting shard stats failed; the next pass reports again", "shards", len(stats), "err", err)
	}
}
