// The names Temporal knows Strata's workflows and activities by: registered by the worker, used
// by clients, schedules and the `temporal` CLI (`--type StoreMaintenance`). Renaming one breaks
// running histories and schedules, so each is written once, here.
package workflows

// Workflow type names.
const (
	WorkflowStoreMaintenance = "StoreMaintenance" // one per store (workflow ID store/<kind>/<name>)
	WorkflowSweep            = "Sweep"            // run by the strata-sweep schedule
	WorkflowRegistryCleanup  = "RegistryCleanup"  // run by the strata-registry-cleanup schedule
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
)
