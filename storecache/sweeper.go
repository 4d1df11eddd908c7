// The flush sweeper: one process-wide loop that seals every resident store of every kind on an
// interval (never a timer per store: 100k timers would cost more than the stores), concurrently
// so a slow store never delays another, each store bounded by max(5 x interval, 30 s) so a hung
// one cannot stall the pass (not even one deaf to its context: the pass stops waiting for it). After sealing it reports the shards' pending work to the catalog in
// one batch and closes resident stores that were deleted through another worker; a slow or
// unreachable PostgreSQL delays only those two steps, never appends or reads.
package storecache

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/lsm"
)

// SweeperMetrics count flush outcomes.
type SweeperMetrics struct {
	flushes *prometheus.CounterVec
}

// NewSweeperMetrics registers the sweeper's metrics with reg (when not nil).
func NewSweeperMetrics(reg prometheus.Registerer) *SweeperMetrics {
	m := &SweeperMetrics{flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_flushes_total", Help: "Flush sweeper seals of resident stores, by outcome (sealed, idle, error, fenced, timeout, busy: the previous flush of the store is still stuck).",
	}, []string{"outcome"})}
	if reg != nil {
		reg.MustRegister(m.flushes)
	}
	return m
}

// sweepConcurrency bounds how many stores one pass seals at once.
const sweepConcurrency = 16

// flushGrace is how long past its deadline a pass waits for a store's flush before going on.
const flushGrace = 5 * time.Second

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

// FlushPass seals every resident store once and reports shard stats. The pass waits for each
// store's flush at most perStore (plus a grace): a flush stuck in a storage call deaf to its
// context (a hung disk) is left to finish on its own goroutine, counted as a timeout, and its
// store is skipped by later passes until it returns.
func (m *Manager) FlushPass(ctx context.Context, interval time.Duration, metrics *SweeperMetrics) {
	hs := m.residentStores()
	perStore := m.cfg.FlushTimeout
	if perStore <= 0 {
		perStore = max(5*interval, 30*time.Second)
	}
	sem := semaphore.NewWeighted(sweepConcurrency)
	var mu sync.Mutex // guards stats
	var stats []catalog.ShardStats
	count := func(outcome string) {
		if metrics != nil {
			metrics.flushes.WithLabelValues(outcome).Inc()
		}
	}
	var pass sync.WaitGroup // this pass's flushes that returned or were given up on
	for i, h := range hs {
		if err := sem.Acquire(ctx, 1); err != nil {
			for _, h := range hs[i:] {
				m.releaser(h)()
			}
			break
		}
		if !h.flushing.CompareAndSwap(false, true) {
			sem.Release(1)
			m.releaser(h)()
			count("busy")
			continue
		}
		pass.Add(1)
		m.flushes.Add(1)
		returned := make(chan struct{})
		var gaveUp atomic.Bool
		go func() { // waits for the flush below, or gives up on it
			defer pass.Done()
			defer sem.Release(1)
			select {
			case <-returned:
			case <-time.After(perStore + flushGrace):
				gaveUp.Store(true)
				m.log.Warn("flush stuck in storage; the pass goes on without it", "kind", h.kind, "name", h.name)
				count("timeout")
			}
		}()
		go func() {
			defer m.flushes.Done()
			defer h.flushing.Store(false)
			defer m.releaser(h)()
			defer close(returned)
			sctx, cancel := context.WithTimeout(ctx, perStore)
			defer cancel()
			sealed, err := h.store.SealIfDue(sctx, 0)
			outcome := "idle"
			switch {
			case sctx.Err() == context.DeadlineExceeded:
				outcome = "timeout"
			case errors.Is(err, lsm.ErrFenced):
				outcome = "fenced"
				m.ReportFenced(h.kind, h.name)
			case err != nil:
				outcome = "error"
				m.log.Warn("flush failed", "kind", h.kind, "name", h.name, "err", err)
			case sealed:
				outcome = "sealed"
			}
			if !gaveUp.Load() {
				count(outcome)
			}
			if !sealed || err != nil {
				return
			}
			st, ok, err := h.store.OwnShardState(sctx)
			if err != nil || !ok {
				return
			}
			mu.Lock()
			stats = append(stats, ShardStats(h.kind, h.name, st))
			mu.Unlock()
		}()
	}
	pass.Wait()
	mu.Lock()
	report := slices.Clone(stats) // a flush that returns late appends to stats, never to report
	mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if len(report) > 0 {
		if err := m.cat.UpsertShardStats(rctx, report); err != nil {
			m.log.Warn("reporting shard stats failed; the next pass reports again", "shards", len(report), "err", err)
		}
	}
	m.evictDeleted(rctx)
}

// evictDeleted drops the resident stores whose registry row is no longer live: deleted (or
// deleted and recreated under the same name) through another worker. Their next request
// resolves the name through the catalog again (404, or the new store), so a deleted store stops
// taking appends here within one pass instead of when the cache happens to evict it. On a
// catalog error they stay resident until the next pass.
func (m *Manager) evictDeleted(ctx context.Context) {
	m.mu.Lock()
	asked := map[uuid.UUID]bool{}
	for _, key := range m.cache.Keys() {
		if h, ok := m.cache.Peek(key); ok && !h.evicted {
			asked[h.entry.ID] = true
		}
	}
	m.mu.Unlock()
	if len(asked) == 0 {
		return
	}
	live, err := m.cat.LiveStoreIDs(ctx, slices.Collect(maps.Keys(asked)))
	if err != nil {
		m.log.Warn("checking resident stores against the registry failed; the next pass checks again", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, key := range m.cache.Keys() {
		// Only handles that were asked about: one opened meanwhile is a live incarnation.
		if h, ok := m.cache.Peek(key); ok && !h.evicted && asked[h.entry.ID] && !live[h.entry.ID] {
			m.log.Info("store deleted through another worker; closing it here", "kind", h.kind, "name", h.name)
			m.cache.Remove(key) // onEvict closes it once unused
		}
	}
}

// Flush seals s (the open store kind/name) and reports its shard to the catalog at once, so a
// seal a client asked for shows in `strata status` and the sweeps within seconds rather than at
// the next flush pass. Reporting is best effort (bounded, logged): the seal is what the caller
// waits for.
func (m *Manager) Flush(ctx context.Context, kind catalog.Kind, name string, s *lsm.Store) error {
	if err := s.Flush(ctx); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, ok, err := s.OwnShardState(rctx)
	if err == nil && ok {
		err = m.cat.UpsertShardStats(rctx, []catalog.ShardStats{ShardStats(kind, name, st)})
	}
	if err != nil {
		m.log.Warn("reporting a flushed shard failed; the next flush pass reports it", "store", string(kind)+"/"+name, "err", err)
	}
	return nil
}

// ShardStats is a store's shard state as the catalog's shard_stats row (the one conversion every
// reporter uses: the flush pass, client-requested flushes, the stats activity).
func ShardStats(kind catalog.Kind, name string, st lsm.ShardState) catalog.ShardStats {
	return catalog.ShardStats{Kind: kind, Name: name, Shard: st.Shard, PendingGenerations: st.PendingGenerations,
		PendingRows: st.PendingRows, PendingBytes: st.PendingBytes, OldestPendingAt: st.OldestPendingAt}
}
