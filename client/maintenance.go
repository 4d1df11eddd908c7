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
