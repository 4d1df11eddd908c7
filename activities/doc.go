// Package activities will own the Temporal activities that do maintenance work against storage/
// and catalog/: WAL merge (with its memory-budget reservation reported in heartbeats), key index
// builds, compaction, version cleanup, stats refresh. Arrives with the maintenance issue.
package activities
