// The registry cleanup activity: purge long-deleted stores, drop quiet shard rows.
package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/strata-store/strata/workflows"
)

// RegistryCleanup purges stores soft-deleted longer than in.Grace (data first, then the row) and
// deletes shard_stats rows idle longer than in.QuietShards.
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
	activity.RecordHeartbeat(ctx, HeartbeatDetails{Phase: "quiet shards"})
	res.ShardRowsDeleted, err = cat.DeleteQuietShardStats(ctx, time.Now().Add(-in.QuietShards), 10_000)
	return res, err
}
