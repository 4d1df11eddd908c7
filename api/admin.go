// Admin routes: queue maintenance for a store (the per-store Temporal workflow runs it). They
// take their own bearer token (STRATA_ADMIN_TOKEN).
package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/workflows"
)

// MaintenanceRequester queues a maintenance request and returns the store workflow's run ID.
type MaintenanceRequester func(ctx context.Context, store workflows.StoreRef, req workflows.Request) (runID string, err error)

// MaintenanceResponse answers an admin maintenance request.
type MaintenanceResponse struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	Op         string `json:"op"`
}

// maintenanceQueueTimeout bounds queueing a maintenance request (a signal-with-start).
const maintenanceQueueTimeout = 10 * time.Second

func (h *handlers) registerAdmin(g *echo.Group) {
	g.POST("/:kind/:name/maintenance", h.requestMaintenance)
}

func (h *handlers) requestMaintenance(c echo.Context) error {
	kind, err := catalog.ParseKind(c.Param("kind"))
	if err != nil {
		return err
	}
	name := c.Param("name")
	if err := catalog.ValidateName(name); err != nil {
		return err
	}
	var req workflows.Request
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if !req.Op.Valid() {
		return invalid("op %q: want merge_wal, build_key_index, compact, cleanup_versions or stats_refresh", req.Op)
	}
	if _, err := h.deps.Stores.Catalog().GetStore(c.Request().Context(), kind, name); err != nil {
		return err
	}
	if h.deps.Maintenance == nil {
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "maintenance is not configured on this worker (no Temporal client)"}
	}
	ref := workflows.StoreRef{Kind: string(kind), Name: name}
	ctx, cancel := context.WithTimeout(c.Request().Context(), maintenanceQueueTimeout)
	defer cancel()
	runID, err := h.deps.Maintenance(ctx, ref, req)
	if err != nil {
		// The request was checked above: what fails now is reaching Temporal.
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, RetryAfter: 5 * time.Second, Err: err,
			Message: "maintenance could not be queued: Temporal did not accept the request; retry"}
	}
	return c.JSON(http.StatusAccepted, MaintenanceResponse{WorkflowID: ref.WorkflowID(), RunID: runID, Op: string(req.Op)})
}
