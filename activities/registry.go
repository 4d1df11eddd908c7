// The registry cleanup activity: purge long-deleted stores, drop quiet shard rows.
package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/workflows"
)

// purgeFailed reports a store registry cleanup could not purge: in the result (the Temporal UI
// shows it), a log line naming the store, a metric, and the catalog row (tried last next time).
func (a *Activities) purgeFailed(ctx context.Context, st catalog.Store, err error, res *workflows.RegistryCleanupResult) {
	res.PurgeFailures++
	if len(res.PurgeFailed) < 100 {
		res.PurgeFailed = append(res.PurgeFailed, fmt.Sprintf("%s/%s: %v", st.Kind, st.Name, err))
	}
	a.Metrics.purgeFailed()
	log := activity.GetLogger(ctx)
	log.Warn("registry cleanup could not purge a deleted store; it is tried again after the others next run",
		"store", string(st.Kind)+"/"+st.Name, "id", st.ID, "err", err)
	if merr := a.Stores.Catalog().MarkPurgeFailed(ctx, st.ID); merr != nil {
		log.Warn("registry cleanup: recording a failed purge failed", "store", string(st.Kind)+"/"+st.Name, "err", merr)
	}
}

// RegistryCleanup purges stores soft-deleted longer than in.Grace (data first, then the row),
// reports (and with in.AdoptOrphans adopts) datasets with no registry row, and deletes
// shard_stats rows idle longer than in.QuietShards.
func (a *Activities) RegistryCleanup(ctx context.Context, in workflows.RegistryCleanupInput) (workflows.RegistryCleanupResult, error) {
	in = in.WithDefaults()
	cat := a.Stores.Catalog()
	var res workflows.RegistryCleanupResult
	deleted, err := cat.ListDeletedStores(ctx, time.Now().Add(-in.Grace), in.MaxStores+1)
	if err != nil {
		return res, err
	}
	if len(deleted) > in.MaxStores {
		res.StoresLeftForLater = len(deleted) - in.MaxStores
		deleted = deleted[:in.MaxStores]
	}
	for _, st := range deleted {
		activity.RecordHeartbeat(ctx, HeartbeatDetails{Phase: PhasePurging, Store: string(st.Kind) + "/" + st.Name})
		n, err := a.Stores.Purge(ctx, st)
		res.ObjectsDeleted += n
		if err != nil {
			if ctx.Err() != nil {
				return res, err // the activity was cancelled or timed out: the next attempt goes on
			}
			// One store that cannot be purged (its location is gone, its storage refuses) is
			// reported and tried again after every other store, never blocking them.
			a.purgeFailed(ctx, st, err, &res)
			continue
		}
		res.StoresPurged++
	}
	for _, kind := range catalog.Kinds {
		activity.RecordHeartbeat(ctx, HeartbeatDetails{Phase: PhaseOrphans, Store: string(kind)})
		orphans, err := a.Stores.Orphans(ctx, kind)
		if err != nil {
			return res, err
		}
		for _, o := range orphans {
			res.Orphans++
			if len(res.OrphanURIs) < 100 {
				res.OrphanURIs = append(res.OrphanURIs, o.URI)
			}
			if in.AdoptOrphans {
				adopted, err := a.Stores.Adopt(ctx, o)
				if err != nil {
					return res, err
				}
				if adopted {
					res.OrphansAdopted++
				}
			}
		}
	}
	activity.RecordHeartbeat(ctx, HeartbeatDetails{Phase: PhaseQuietShards})
	res.ShardRowsDeleted, err = cat.DeleteQuietShardStats(ctx, time.Now().Add(-in.QuietShards), 10_000)
	return res, err
}
