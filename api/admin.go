// Admin routes: queue maintenance for a store (the per-store Temporal workflow runs it), or, with
// ?wait=true, run it and answer with its result. They take their own bearer token
// (STRATA_ADMIN_TOKEN).
package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/workflows"
)

// Maintainer reaches the stores' maintenance workflows (Temporal; worker.Maintainer).
type Maintainer interface {
	// Queue adds req to the store's maintenance queue and returns its workflow's run ID.
	Queue(ctx context.Context, store workflows.StoreRef, req workflows.Request) (runID string, err error)
	// Run queues req and waits until it has run, returning its result or its (application) error.
	Run(ctx context.Context, store workflows.StoreRef, req workflows.Request) (workflows.ActivityResult, error)
	// Running names the maintenance activities of the store that are running or retrying.
	Running(ctx context.Context, store workflows.StoreRef) ([]string, error)
	// Available reports whether Temporal answers and a maintenance worker serves the queue.
	Available(ctx context.Context) bool
}

// MaintenanceResponse answers an admin maintenance request: the workflow that queued it and,
// when the request waited (?wait=true), the result of its run.
type MaintenanceResponse struct {
	WorkflowID string                    `json:"workflow_id"`
	RunID      string                    `json:"run_id,omitempty"`
	Op         string                    `json:"op"`
	Result     *workflows.ActivityResult `json:"result,omitempty"`
}

// maintenanceQueueTimeout bounds queueing a maintenance request (a signal-with-start).
const maintenanceQueueTimeout = 10 * time.Second

func (h *handlers) registerAdmin(g *routeGroup) {
	g.POST("/:kind/:name/maintenance", h.requestMaintenance)
	g.GET("/:kind/:name/history", h.maintenanceHistory)
	g.GET("/status", h.status)
	h.registerTenants(g)
}

// adminStore is the store an admin route names: its kind and its name, both checked.
func adminStore(c echo.Context) (catalog.Kind, string, error) {
	kind, err := catalog.ParseKind(c.Param("kind"))
	if err != nil {
		return "", "", err
	}
	name := c.Param("name")
	if err := catalog.ValidateName(name); err != nil {
		return "", "", err
	}
	return kind, name, nil
}

func (h *handlers) requestMaintenance(c echo.Context) error {
	kind, name, err := adminStore(c)
	if err != nil {
		return err
	}
	var req workflows.Request
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if !req.Op.Valid() {
		return invalid("op %q: want merge_wal, build_key_index, compact, cleanup_versions or stats_refresh", req.Op)
	}
	if req.MaxPasses < 0 || req.TargetRowsPerFragment < 0 || req.MinFragments < 0 {
		return invalid("max_passes, target_rows_per_fragment and min_fragments must not be negative")
	}
	req.ID = "" // set by the workflow for requests that wait
	wait := queryFlag(c, "wait")
	if _, err := h.deps.Stores.Catalog().GetStore(c.Request().Context(), kind, name); err != nil {
		return err
	}
	if h.deps.Maintenance == nil {
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "maintenance is not configured on this worker (no Temporal client)"}
	}
	ref := workflows.StoreRef{Kind: kind, Name: name}
	if wait {
		// Bounded by the request's deadline: past it the client hears that it still runs.
		res, err := h.deps.Maintenance.Run(c.Request().Context(), ref, req)
		if err != nil {
			return maintenanceError(string(req.Op), name, err)
		}
		return c.JSON(http.StatusOK, MaintenanceResponse{WorkflowID: ref.WorkflowID(), Op: string(req.Op), Result: &res})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), maintenanceQueueTimeout)
	defer cancel()
	runID, err := h.deps.Maintenance.Queue(ctx, ref, req)
	if err != nil {
		// The request was checked above: what fails now is reaching Temporal.
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, RetryAfter: 5 * time.Second, Err: err,
			Message: "maintenance could not be queued: Temporal did not accept the request; retry"}
	}
	return c.JSON(http.StatusAccepted, MaintenanceResponse{WorkflowID: ref.WorkflowID(), RunID: runID, Op: string(req.Op)})
}

// MaintenanceRun is one attempt of a store's maintenance, from the catalog's history.
type MaintenanceRun struct {
	Op         string    `json:"op"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Outcome    string    `json:"outcome"` // ok or failed
	Detail     string    `json:"detail"`  // the result (JSON) or the error
}

// MaintenanceHistory answers GET /api/v1/admin/{kind}/{name}/history: the store's last runs and
// its operations failing now.
type MaintenanceHistory struct {
	Runs     []MaintenanceRun     `json:"runs"`
	Failures []MaintenanceFailure `json:"failures"`
}

// maintenanceHistory answers the store's last maintenance attempts (?limit, at most 100), newest
// first, and its failing operations.
func (h *handlers) maintenanceHistory(c echo.Context) error {
	kind, name, err := adminStore(c)
	if err != nil {
		return err
	}
	limit := 100
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			return invalid("limit must be an integer between 1 and 100")
		}
	}
	cat := h.deps.Stores.Catalog()
	if _, err := cat.GetStore(c.Request().Context(), kind, name); err != nil {
		return err
	}
	runs, err := cat.ListRuns(c.Request().Context(), kind, name, limit)
	if err != nil {
		return err
	}
	failures, err := cat.StoreFailures(c.Request().Context(), kind, name)
	if err != nil {
		return err
	}
	out := MaintenanceHistory{Runs: make([]MaintenanceRun, len(runs)), Failures: failureDTOs(failures)}
	for i, r := range runs {
		out.Runs[i] = MaintenanceRun{Op: r.Op, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Outcome: r.Outcome, Detail: r.Detail}
	}
	return c.JSON(http.StatusOK, out)
}
