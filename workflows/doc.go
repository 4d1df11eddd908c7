// Package workflows will own Strata's Temporal workflow definitions: the per-store maintenance
// workflow (ID store/<kind>/<name>) that serialises merge, index, compaction and cleanup
// requests, registry cleanup, and the scheduled sweeps. Workflow code is deterministic: it only
// orchestrates activities (package activities). Arrives with the maintenance issue.
package workflows
