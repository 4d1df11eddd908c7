// The names Temporal knows Strata's workflows and activities by: registered by the worker, used
// by clients, schedules and the `temporal` CLI (`--type StoreMaintenance`). Renaming one breaks
// running histories and schedules, so each is written once, here.
package workflows

// Workflow type names.
const (
	WorkflowStoreMaintenance = "StoreMaintenance" // one per store (workflow ID store/<kind>/<name>)
	WorkflowSweep            = "Sweep"            // run by the strata-sweep schedule
	WorkflowRegistryCleanup  = "RegistryCleanup"  // run by the strata-registry-cleanup schedule
	WorkflowSnapshotLease    = "SnapshotLease"    // one per read token (workflow ID snapshot/<id>)
)

// Activity type names.
const (
	ActivityMergeWAL        = "MergeWAL"
	ActivityBuildKeyIndex   = "BuildKeyIndex"
	ActivityCompact         = "Compact"
	ActivityCleanupVersions = "CleanupVersions"
	ActivityStatsRefresh    = "StatsRefresh"
	ActivitySweep           = "SweepCandidates"
	ActivityRegistryCleanup = "RegistryCleanup"
	ActivityRecordOutcome   = "RecordMaintenanceOutcome" // a local activity of StoreMaintenance
	ActivityReleaseSnapshot = "ReleaseSnapshot"          // SnapshotLease's, at the token's end
)

// Search attributes a store's maintenance workflow sets, so the Temporal UI's workflow list
// finds failing stores without opening histories (`StrataFailing = true`). The worker registers
// them on its namespace at start (and scripts/temporal.sh on the dev server).
const (
	SearchAttrFailing   = "StrataFailing"   // Bool: an operation of the store exhausted its retries and is being retried with backoff
	SearchAttrLastError = "StrataLastError" // Keyword: "<ErrorType>: <message>" of the latest failure (the message names the op and store)
)
