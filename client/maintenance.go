// Maintenance triggers through the admin route (needs the admin token when the server sets one).
package client

import (
	"context"
	"net/http"
	"net/url"
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
