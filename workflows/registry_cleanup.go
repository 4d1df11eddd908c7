// RegistryCleanup: the hourly scheduled workflow (Schedule "strata-registry-cleanup") that purges
// the data and registry rows of stores soft-deleted longer than a grace period, reports (and
// optionally adopts) datasets on storage with no registry row, and drops shard_stats rows of
// shards that went quiet with nothing pending. One activity; it deletes as it
// goes, so an interrupted run loses nothing and the next run finishes the job.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// RegistryCleanupScheduleID is the Temporal Schedule that runs RegistryCleanup.
const RegistryCleanupScheduleID = "strata-registry-cleanup"

// ActivityRegistryCleanup names the registry cleanup activity.

// RegistryCleanupInput tunes a cleanup; zero fields take the defaults.
type RegistryCleanupInput struct {
	Grace       time.Duration `json:"grace,omitempty"`        // purge stores deleted longer ago than this (default 24h)
	QuietShards time.Duration `json:"quiet_shards,omitempty"` // drop idle shard rows not observed for this long (default 24h)
	MaxStores   int           `json:"max_stores,omitempty"`   // stores purged per run (default 100)
	// AdoptOrphans registers rollout datasets found on storage with no registry row (they are
	// always reported).
	AdoptOrphans bool `json:"adopt_orphans,omitempty"`
}

// WithDefaults fills zero fields.
func (in RegistryCleanupInput) WithDefaults() RegistryCleanupInput {
	if in.Grace <= 0 {
		in.Grace = 24 * time.Hour
	}
	if in.QuietShards <= 0 {
		in.QuietShards = 24 * time.Hour
	}
	if in.MaxStores <= 0 {
		in.MaxStores = 100
	}
	return in
}

// RegistryCleanupResult reports a cleanup.
type RegistryCleanupResult struct {
	StoresPurged       int      `json:"stores_purged"`
	ObjectsDeleted     int      `json:"objects_deleted"`
	ShardRowsDeleted   int64    `json:"shard_rows_deleted"`
	StoresLeftForLater int      `json:"stores_left_for_later"`
	Orphans            int      `json:"orphans"`               // datasets with no registry row
	OrphanURIs         []string `json:"orphan_uris,omitempty"` // the first 100 of them
	OrphansAdopted     int      `json:"orphans_adopted,omitempty"`
	// PurgeFailures counts the deleted stores this run could not purge (each is tried again
	// after the others next run); PurgeFailed names the first 100 of them with the error.
	PurgeFailures int      `json:"purge_failures,omitempty"`
	PurgeFailed   []string `json:"purge_failed,omitempty"`
}

// RegistryCleanup is the workflow function.
func RegistryCleanup(ctx workflow.Context, in RegistryCleanupInput) (RegistryCleanupResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		Summary:             "purge deleted stores and quiet shard rows",
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var res RegistryCleanupResult
	err := workflow.ExecuteActivity(ctx, ActivityRegistryCleanup, in.WithDefaults()).Get(ctx, &res)
	return res, err
}
