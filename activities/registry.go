// The registry cleanup activity: purge long-deleted stores, drop quiet shard rows.
package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/workflows"
)

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
		activity.RecordHeartbeat(ctx, HeartbeatDetails{Phase: "purging " + string(st.Kind) + "/" + st.Name})
		n, err := a.Stores.Purge(ctx, st)
		if err != nil {
			return res, err
		}
		res.StoresPurged++
		res.ObjectsDeleted += n
	}
	for _, kind := range catalog.Kinds {
		activity.RecordHeartbeat(ctx, HeartbeatDetails{Phase: "orphans " + string(kind)})
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
	activity.RecordHeartbeat(ctx, HeartbeatDetails{Phase: "quiet shards"})
	res.ShardRowsDeleted, err = cat.DeleteQuietShardStats(ctx, time.Now().Add(-in.QuietShards), 10_000)
	return res, err
}
