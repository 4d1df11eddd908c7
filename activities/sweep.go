// The sweep activity: candidate stores from the catalog's stats become maintenance requests.
package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/workflows"
)

// Requester queues a maintenance request for a store (worker.RequestMaintenance in production).
type Requester func(ctx context.Context, store workflows.StoreRef, req workflows.Request) error

// sweepConcurrency bounds the signal-with-start calls a sweep has in flight: a tick that queues
// a thousand requests takes seconds, not one round trip per store in a row. (More in flight
// does not help against the Temporal dev server: 1,024 took 11 s with 16 and with 64.)
const sweepConcurrency = 16

// sweepRequest is one planned request.
type sweepRequest struct {
	store workflows.StoreRef
	op    workflows.Op
}

// SweepCandidates queues merge, index, compaction and stats-refresh requests for the stores that
// need them, hottest first, at most in.MaxRequests in all. The plan is made first (in priority
// order, deduplicated, within the cap); the requests are then sent concurrently.
func (a *Activities) SweepCandidates(ctx context.Context, in workflows.SweepInput) (workflows.SweepResult, error) {
	in = in.WithDefaults()
	if a.Request == nil {
		return workflows.SweepResult{}, fmt.Errorf("activities: no maintenance requester configured")
	}
	plan, err := a.planSweep(ctx, in)
	if err != nil {
		return workflows.SweepResult{Queued: map[workflows.Op]int{}}, err
	}
	res := workflows.SweepResult{Queued: map[workflows.Op]int{}}
	var mu sync.Mutex // guards res and queued
	var queued []catalog.StoreRef
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sweepConcurrency)
	for _, r := range plan {
		g.Go(func() error {
			if err := a.Request(gctx, r.store, workflows.Request{Op: r.op}); err != nil {
				return fmt.Errorf("queue %s for %s: %w", r.op, r.store.WorkflowID(), err)
			}
			mu.Lock()
			res.Queued[r.op]++
			queued = append(queued, catalog.StoreRef{Kind: r.store.Kind, Name: r.store.Name})
			mu.Unlock()
			return nil
		})
	}
	err = g.Wait()
	// What was queued is marked even when some request failed (the paging rule skips it until
	// its maintenance has run).
	if merr := a.Stores.Catalog().MarkSwept(ctx, queued); merr != nil && err == nil {
		err = merr
	}
	return res, err
}

// planSweep reads the candidate queries in priority order — stores with many pending
// generations, then long-pending ones, unindexed, compactable, far past their last version
// cleanup, then stale stats — each ordered round-robin across tenants (weighted by quota
// weight), and returns at most in.MaxRequests distinct requests.
func (a *Activities) planSweep(ctx context.Context, in workflows.SweepInput) ([]sweepRequest, error) {
	tenancy := catalog.Tenancy{Depth: max(in.TenantDepth, 0), Separator: in.TenantSeparator}
	if err := tenancy.Validate(); err != nil {
		return nil, err
	}
	cat := a.Stores.Catalog().Candidates(catalog.CandidateOptions{Tenancy: tenancy, RequeueAfter: in.RequeueAfter})
	var plan []sweepRequest
	seen := map[sweepRequest]bool{}
	add := func(stats []catalog.StoreStats, op workflows.Op) {
		for _, st := range stats {
			r := sweepRequest{store: workflows.StoreRef{Kind: st.Kind, Name: st.Name}, op: op}
			if len(plan) < in.MaxRequests && !seen[r] {
				seen[r] = true
				plan = append(plan, r)
			}
		}
	}
	steps := []struct {
		op    workflows.Op
		query func() ([]catalog.StoreStats, error)
	}{
		{workflows.OpMergeWAL, func() ([]catalog.StoreStats, error) {
			return cat.Merge(ctx, in.MinPendingGenerations, in.MaxRequests)
		}},
		{workflows.OpMergeWAL, func() ([]catalog.StoreStats, error) {
			return cat.StaleMerge(ctx, time.Now().Add(-in.StaleAfter), in.MaxRequests)
		}},
		{workflows.OpBuildKeyIndex, func() ([]catalog.StoreStats, error) { return cat.Index(ctx, in.MaxRequests) }},
		{workflows.OpCompact, func() ([]catalog.StoreStats, error) {
			return cat.Compact(ctx, in.MaxRequests)
		}},
		// Storage grows with every version a merge or compaction leaves behind: clean up stores
		// holding much garbage (absolutely, or for their size), or whose table moved far past
		// its last cleanup.
		{workflows.OpCleanupVersions, func() ([]catalog.StoreStats, error) {
			return cat.Cleanup(ctx, catalog.CleanupPolicy{MinVersions: in.MinVersionsToClean,
				MinGarbageBytes: in.MinGarbageBytes, VolumeInterval: in.VersionTTL / 4,
				GarbageRatio: in.GarbageRatio, RatioInterval: in.VersionTTL}, in.MaxRequests)
		}},
		// Stats nobody refreshed lately (an idle store, or one never observed) come last, and
		// only a few per tick: thousands of idle stores must not queue ahead of the merges that
		// seals ask for between two ticks.
		{workflows.OpStatsRefresh, func() ([]catalog.StoreStats, error) {
			stores, err := cat.StaleStats(ctx, time.Now().Add(-in.StatsStaleAfter), min(in.MaxStatsRefreshes, in.MaxRequests))
			out := make([]catalog.StoreStats, len(stores))
			for i, st := range stores {
				out[i] = catalog.StoreStats{Kind: st.Kind, Name: st.Name}
			}
			return out, err
		}},
	}
	for _, s := range steps {
		if len(plan) >= in.MaxRequests {
			break
		}
		stats, err := s.query()
		if err != nil {
			return nil, err
		}
		add(stats, s.op)
	}
	return plan, nil
}
