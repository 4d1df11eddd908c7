// Sweep: the scheduled workflow (Temporal Schedule "strata-sweep", every 30 s) that turns catalog
// statistics into maintenance requests. It is one activity: read the candidate queries (most
// pending generations first, stale pending generations, fragment count, index coverage), each
// shared fairly across tenants, and queue at most MaxRequests requests with signal-with-start;
// each store's own workflow deduplicates and serialises them. Stores it queued are skipped by the
// next sweeps until their maintenance ran (or RequeueAfter), so a backlog is paged through.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// SweepScheduleID is the Temporal Schedule that runs Sweep.
const SweepScheduleID = "strata-sweep"

// ActivitySweep names the sweep activity.

// SweepInput tunes one sweep; zero fields take the defaults. (Compaction candidacy has no
// threshold here: it comes from the compaction planner, observed with each store's stats; an old
// schedule's "min_fragments" is ignored.)
type SweepInput struct {
	MinPendingGenerations int           `json:"min_pending_generations,omitempty"` // default 8
	StaleAfter            time.Duration `json:"stale_after,omitempty"`             // default 5m: merge even a few generations this old
	MinVersionsToClean    int           `json:"min_versions_to_clean,omitempty"`   // default 64: table versions since the last version cleanup
	MinGarbageBytes       int64         `json:"min_garbage_bytes,omitempty"`       // default 64 MiB: bytes the table no longer references, not yet cleaned
	// GarbageRatio: clean a store whose garbage is this share of its table's bytes, once its last
	// cleanup is a version TTL old (default 1: as much garbage as data).
	GarbageRatio float64 `json:"garbage_ratio,omitempty"`
	// VersionTTL is the workers' version TTL (default 1h; the worker sets its --version-ttl):
	// garbage younger than it cannot be deleted, so garbage-driven cleanups of a store wait a
	// quarter of it (MinGarbageBytes) or all of it (GarbageRatio) after its last cleanup.
	VersionTTL        time.Duration `json:"version_ttl,omitempty"`
	MaxRequests       int           `json:"max_requests,omitempty"`        // default 1024 per sweep
	StatsStaleAfter   time.Duration `json:"stats_stale_after,omitempty"`   // default 10m: refresh stats older than this
	MaxStatsRefreshes int           `json:"max_stats_refreshes,omitempty"` // default 128 per sweep
	// TenantDepth and TenantSeparator group stores into tenants (name prefixes) whose candidates
	// share each sweep's requests round-robin, weighted by their quota weights: default depth 1
	// with "."; -1 puts every store in one tenant (rank order only).
	TenantDepth     int    `json:"tenant_depth,omitempty"`
	TenantSeparator string `json:"tenant_separator,omitempty"`
	// RequeueAfter: a store this sweep queued is not queued again until its stats are observed
	// again (its maintenance ran) or this long has passed (default 10m), so sweeps page through a
	// backlog larger than MaxRequests.
	RequeueAfter time.Duration `json:"requeue_after,omitempty"`
}

// WithDefaults fills zero fields.
func (in SweepInput) WithDefaults() SweepInput {
	if in.MinPendingGenerations <= 0 {
		in.MinPendingGenerations = 8
	}
	if in.StaleAfter <= 0 {
		in.StaleAfter = 5 * time.Minute
	}
	if in.MinVersionsToClean <= 0 {
		in.MinVersionsToClean = 64
	}
	if in.MinGarbageBytes <= 0 {
		in.MinGarbageBytes = 64 << 20
	}
	if in.GarbageRatio <= 0 {
		in.GarbageRatio = 1
	}
	if in.VersionTTL <= 0 {
		in.VersionTTL = time.Hour
	}
	if in.MaxRequests <= 0 {
		// About what 4 activity slots drain between two 30 s ticks at ~100 ms per merge: a
		// smaller cap leaves slots idle while stores wait for the next tick.
		in.MaxRequests = 1024
	}
	if in.MaxStatsRefreshes <= 0 {
		in.MaxStatsRefreshes = 128
	}
	if in.StatsStaleAfter <= 0 {
		in.StatsStaleAfter = 10 * time.Minute
	}
	if in.TenantDepth == 0 {
		in.TenantDepth = 1
	}
	if in.TenantSeparator == "" {
		in.TenantSeparator = "."
	}
	if in.RequeueAfter <= 0 {
		in.RequeueAfter = 10 * time.Minute
	}
	return in
}

// SweepResult counts the requests a sweep queued, by operation.
type SweepResult struct {
	Queued map[Op]int `json:"queued"`
}

// Sweep is the workflow function.
func Sweep(ctx workflow.Context, in SweepInput) (SweepResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: 2 * time.Minute,
		Summary:             "read catalog candidates and queue maintenance",
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var res SweepResult
	err := workflow.ExecuteActivity(ctx, ActivitySweep, in.WithDefaults()).Get(ctx, &res)
	return res, err
}
