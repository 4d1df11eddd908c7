// The sweep activity: candidate stores from the catalog's stats become maintenance requests.
package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/workflows"
)

// Requester queues a maintenance request for a store (worker.RequestMaintenance in production).
type Requester func(ctx context.Context, store workflows.StoreRef, req workflows.Request) error

// SweepCandidates queues merge, index, compaction and stats-refresh requests for the stores that
// need them, hottest first, at most in.MaxRequests in all.
func (a *Activities) SweepCandidates(ctx context.Context, in workflows.SweepInput) (workflows.SweepResult, error) {
	in = in.WithDefaults()
	if a.Request == nil {
		return workflows.SweepResult{}, fmt.Errorf("activities: no maintenance requester configured")
	}
	cat := a.Stores.Catalog()
	res := workflows.SweepResult{Queued: map[workflows.Op]int{}}
	budget := in.MaxRequests
	queued := map[string]bool{}
	queue := func(stats []catalog.StoreStats, op workflows.Op) error {
		for _, st := range stats {
			if budget == 0 {
				return nil
			}
			ref := workflows.StoreRef{Kind: string(st.Kind), Name: st.Name}
			key := ref.WorkflowID() + "#" + string(op)
			if queued[key] {
				continue
			}
			if err := a.Request(ctx, ref, workflows.Request{Op: op}); err != nil {
				return fmt.Errorf("queue %s for %s: %w", op, ref.WorkflowID(), err)
			}
			queued[key] = true
			res.Queued[op]++
			budget--
		}
		return nil
	}
	hot, err := cat.MergeCandidates(ctx, in.MinPendingGenerations, in.MaxRequests)
	if err != nil {
		return res, err
	}
	if err := queue(hot, workflows.OpMergeWAL); err != nil {
		return res, err
	}
	stale, err := cat.StaleMergeCandidates(ctx, time.Now().Add(-in.StaleAfter), in.MaxRequests)
	if err != nil {
		return res, err
	}
	if err := queue(stale, workflows.OpMergeWAL); err != nil {
		return res, err
	}
	unindexed, err := cat.IndexCandidates(ctx, in.MaxRequests)
	if err != nil {
		return res, err
	}
	if err := queue(unindexed, workflows.OpBuildKeyIndex); err != nil {
		return res, err
	}
	fragmented, err := cat.CompactCandidates(ctx, in.MinFragments, in.MaxRequests)
	if err != nil {
		return res, err
	}
	if err := queue(fragmented, workflows.OpCompact); err != nil {
		return res, err
	}
	// Stats nobody refreshed lately (an idle store, or one never observed) come last.
	unobserved, err := cat.StaleStatsCandidates(ctx, time.Now().Add(-in.StatsStaleAfter), in.MaxRequests)
	if err != nil {
		return res, err
	}
	asStats := make([]catalog.StoreStats, len(unobserved))
	for i, st := range unobserved {
		asStats[i] = catalog.StoreStats{Kind: st.Kind, Name: st.Name}
	}
	return res, queue(asStats, workflows.OpStatsRefresh)
}
