// Package worker will own the Temporal wiring: client, the strata-maintenance task queue, worker
// options (activity slots, graceful stop), and creating the sweep Schedules at start. Arrives with
// the maintenance issue.
package worker
