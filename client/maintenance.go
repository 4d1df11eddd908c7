// Maintenance triggers through the admin route (needs the admin token when the server sets one).
package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Maintenance operations accepted by RequestMaintenance.
const (
	OpMergeWAL        = "merge_wal"
	OpBuildKeyIndex   = "build_key_index"
	OpCompact         = "compact"
	OpCleanupVersions = "cleanup_versions"
	OpStatsRefresh    = "stats_refresh"
)

// MaintenanceRun identifies the store's maintenance workflow that queued the request.
type MaintenanceRun struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	Op         string `json:"op"`
}

// RequestMaintenance queues op on the store's maintenance workflow (started when not running).
func (c *Client) RequestMaintenance(ctx context.Context, kind Kind, name, op string) (MaintenanceRun, error) {
	var run MaintenanceRun
	err := c.doJSON(ctx, request{method: http.MethodPost, admin: true,
		path: "/api/v1/admin/" + string(kind) + "/" + url.PathEscape(name) + "/maintenance"},
		map[string]string{"op": op}, &run)
	return run, err
}

// MaintenanceResult is what a maintenance run did (fields an operation does not use are zero).
type MaintenanceResult struct {
	GenerationsMerged int    `json:"generations_merged,omitempty"`
	RowsMerged        int64  `json:"rows_merged,omitempty"`
	FragmentsRemoved  int    `json:"fragments_removed,omitempty"`
	FragmentsAdded    int    `json:"fragments_added,omitempty"`
	FilesRemoved      int    `json:"files_removed,omitempty"`
	FilesAdded        int    `json:"files_added,omitempty"`
	VersionsDeleted   int    `json:"versions_deleted,omitempty"`
	FilesDeleted      int    `json:"files_deleted,omitempty"`
	BytesDeleted      int64  `json:"bytes_deleted,omitempty"`
	TableVersion      uint64 `json:"table_version,omitempty"`
}

// MaintenanceOutcome answers RunMaintenance.
type MaintenanceOutcome struct {
	WorkflowID string            `json:"workflow_id"`
	Op         string            `json:"op"`
	Result     MaintenanceResult `json:"result"`
}

// RunMaintenance runs op on the store's maintenance workflow (after what is queued there) and
// waits for its result, as long as the server's request deadline allows: a run still going then
// fails with 503 TIMEOUT (it goes on in the workflow). A failed run's error names its stable type.
func (c *Client) RunMaintenance(ctx context.Context, kind Kind, name, op string, maxPasses int) (MaintenanceOutcome, error) {
	var out MaintenanceOutcome
	body := map[string]any{"op": op}
	if maxPasses > 0 {
		body["max_passes"] = maxPasses
	}
	err := c.doJSON(ctx, request{method: http.MethodPost, admin: true,
		path: "/api/v1/admin/" + string(kind) + "/" + url.PathEscape(name) + "/maintenance", query: url.Values{"wait": {"true"}}},
		body, &out)
	return out, err
}

// StoreStatus is one store's maintenance state, as the catalog's stats report it (Observed
// false: no worker reported stats for it yet).
type StoreStatus struct {
	Kind                  Kind       `json:"kind"`
	Name                  string     `json:"name"`
	Observed              bool       `json:"observed"`
	PendingGenerations    int        `json:"pending_generations"`
	OldestPendingAt       *time.Time `json:"oldest_pending_at,omitempty"`
	Fragments             int        `json:"fragments"`
	IndexCoveredFragments int        `json:"index_covered_fragments"`
	BaseRows              int64      `json:"base_rows"`
	DeletedRows           int64      `json:"deleted_rows"`
	TableVersion          int64      `json:"table_version"`
	LastMergeAt           *time.Time `json:"last_merge_at,omitempty"`
	LastCompactAt         *time.Time `json:"last_compact_at,omitempty"`
	LastCleanupAt         *time.Time `json:"last_cleanup_at,omitempty"`
	GarbageBytes          int64      `json:"garbage_bytes"`
	StatsUpdatedAt        *time.Time `json:"stats_updated_at,omitempty"`
	Shards                int        `json:"shards"` // write shards with stats (one per worker that appended)
}

// MaintenanceFailure is one failing maintenance operation of a store.
type MaintenanceFailure struct {
	Kind         Kind      `json:"kind"`
	Name         string    `json:"name"`
	Op           string    `json:"op"`
	ErrorType    string    `json:"error_type"`
	Message      string    `json:"message"`
	FailingSince time.Time `json:"failing_since"`
	LastFailedAt time.Time `json:"last_failed_at"`
	Failures     int       `json:"failures"`
}

// StatusReport is the admin status: stores (unless failing only) and failing maintenance.
type StatusReport struct {
	Stores   []StoreStatus        `json:"stores"`
	Failures []MaintenanceFailure `json:"failures"`
}

// StatusOptions narrow Status.
type StatusOptions struct {
	Kind    Kind   // "" = every kind
	Prefix  string // store names starting with this
	Limit   int    // at most this many (default 100)
	Failing bool   // only the failing maintenance
}

// Status reads the stores' maintenance state through the admin API (admin token).
func (c *Client) Status(ctx context.Context, opts StatusOptions) (StatusReport, error) {
	q := url.Values{}
	if opts.Kind != "" {
		q.Set("kind", string(opts.Kind))
	}
	if opts.Prefix != "" {
		q.Set("prefix", opts.Prefix)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Failing {
		q.Set("failing", "true")
	}
	var r StatusReport
	err := c.doJSON(ctx, request{method: http.MethodGet, path: "/api/v1/admin/status", query: q, admin: true}, nil, &r)
	return r, err
}
