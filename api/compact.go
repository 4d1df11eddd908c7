// Compaction routes for rollout and context stores (lance-context compatible): run a compaction of the base
// table now, and report its compaction state. The compaction runs as a request of the store's
// maintenance workflow (update-with-start, answered when it has run), so it is serial with every
// other maintenance of the store; only when no maintenance worker serves the queue does the
// handler compact itself.
package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/compaction"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/workflows"
)

// CompactRequest is the body of POST .../compact (every field optional).
type CompactRequest struct {
	TargetRowsPerFragment int64 `json:"target_rows_per_fragment,omitempty"`
	MaterializeDeletions  *bool `json:"materialize_deletions,omitempty"`
}

// CompactResponse reports a compaction.
type CompactResponse struct {
	FragmentsRemoved int `json:"fragments_removed"`
	FragmentsAdded   int `json:"fragments_added"`
	FilesRemoved     int `json:"files_removed"`
	FilesAdded       int `json:"files_added"`
}

// CompactStats describes a base table's compaction state.
type CompactStats struct {
	TotalFragments   int     `json:"total_fragments"`
	IsCompacting     bool    `json:"is_compacting"`
	LastCompaction   *string `json:"last_compaction"`
	LastError        *string `json:"last_error"`
	TotalCompactions uint64  `json:"total_compactions"`
}

// maintenanceProbeTimeout bounds asking Temporal about a store's workflow from a request.
const maintenanceProbeTimeout = 2 * time.Second

// compact answers POST .../compact for stores of kind.
func (h *handlers) compact(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error { return h.compactStore(c, kind) }
}

func (h *handlers) compactStore(c echo.Context, kind catalog.Kind) error {
	var req CompactRequest
	if c.Request().ContentLength != 0 {
		if err := decodeBody(c, &req); err != nil {
			return err
		}
	}
	if req.TargetRowsPerFragment < 0 {
		return invalid("target_rows_per_fragment must be positive")
	}
	name := c.Param("name")
	op := workflows.Request{Op: workflows.OpCompact, Overrides: compaction.Overrides{MinFragments: 2, EverySmallFragment: true,
		TargetRowsPerFragment: req.TargetRowsPerFragment, KeepDeletions: req.MaterializeDeletions != nil && !*req.MaterializeDeletions}}
	return h.withStore(c, kind, func(s *lsm.Store) error {
		ctx := c.Request().Context()
		if h.maintenanceAvailable(ctx) {
			// Through the store's workflow: serial with every other maintenance of the store.
			res, err := h.deps.Maintenance.Run(ctx, workflows.StoreRef{Kind: kind, Name: name}, op)
			if err != nil {
				return maintenanceError(string(workflows.OpCompact), name, err)
			}
			return c.JSON(http.StatusOK, CompactResponse{FragmentsRemoved: res.FragmentsRemoved, FragmentsAdded: res.FragmentsAdded,
				FilesRemoved: res.FilesRemoved, FilesAdded: res.FilesAdded})
		}
		// No maintenance worker to run it: compact here (commits are compare-and-swaps, so this
		// is safe next to a maintenance worker that comes up meanwhile).
		res, err := s.Compact(ctx, lsm.CompactOptions{Compaction: table.CompactionConfig{}.With(op.Overrides)})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, CompactResponse{FragmentsRemoved: res.FragmentsRemoved, FragmentsAdded: res.FragmentsAdded,
			FilesRemoved: res.FilesRemoved, FilesAdded: res.FilesAdded})
	})
}

// maintenanceAvailable reports whether maintenance runs through Temporal now.
func (h *handlers) maintenanceAvailable(ctx context.Context) bool {
	if h.deps.Maintenance == nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, maintenanceProbeTimeout)
	defer cancel()
	return h.deps.Maintenance.Available(pctx)
}

// maintenanceError answers for a maintenance request that did not complete: still running when
// the request's deadline came, failed (by its stable error type), or Temporal unreachable.
func maintenanceError(op, name string, err error) error {
	var app *temporal.ApplicationError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeTimeout, RetryAfter: 10 * time.Second, Err: err,
			Message: fmt.Sprintf("%s of store %q is still running in its maintenance workflow store/<kind>/%s (the Temporal UI shows it; for a compaction GET .../compact/stats shows is_compacting)", op, name, name)}
	case errors.As(err, &app):
		switch app.Type() {
		case workflows.ErrStoreGone:
			return notFound("store %q does not exist", name)
		case workflows.ErrObjectStoreUnavailable, workflows.ErrStorageStalled:
			return &APIError{Status: http.StatusServiceUnavailable, Code: CodeStorageUnavailable, RetryAfter: 5 * time.Second, Err: err,
				Message: fmt.Sprintf("store %q: the store's storage is unavailable; retry later", name)}
		case workflows.ErrOverloaded, workflows.ErrCatalogUnavailable, workflows.ErrFenced, workflows.ErrCommitConflict:
			return &APIError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded, RetryAfter: 5 * time.Second, Err: err,
				Message: fmt.Sprintf("store %q: maintenance failed (%s); retry later", name, app.Type())}
		}
		return &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Err: err,
			Message: fmt.Sprintf("store %q: maintenance failed (%s); see `strata status --failing`", name, app.Type())}
	}
	return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, RetryAfter: 5 * time.Second, Err: err,
		Message: "maintenance could not be run: Temporal did not answer; retry"}
}

// compactStatsOf answers GET .../compact/stats for stores of kind.
func (h *handlers) compactStatsOf(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error { return h.compactStats(c, kind) }
}

func (h *handlers) compactStats(c echo.Context, kind catalog.Kind) error {
	name := c.Param("name")
	return h.withStore(c, kind, func(s *lsm.Store) error {
		ctx := c.Request().Context()
		st, err := s.TableStats(ctx)
		if err != nil {
			return err
		}
		out := CompactStats{TotalFragments: st.Fragments, TotalCompactions: st.Compactions}
		if st.LastCompactAt != nil {
			t := st.LastCompactAt.UTC().Format(time.RFC3339Nano)
			out.LastCompaction = &t
		}
		// What the store's workflow runs now, and the last compaction failure the catalog holds;
		// both best effort within a short bound (stats never fail for want of them).
		pctx, cancel := context.WithTimeout(ctx, maintenanceProbeTimeout)
		defer cancel()
		if h.deps.Maintenance != nil {
			running, _ := h.deps.Maintenance.Running(pctx, workflows.StoreRef{Kind: kind, Name: name})
			out.IsCompacting = slices.Contains(running, workflows.ActivityCompact)
		}
		if f, err := h.deps.Stores.Catalog().StoreFailure(pctx, kind, name, string(workflows.OpCompact)); err == nil && f != nil {
			msg := fmt.Sprintf("%s: %s (failing since %s)", f.ErrorType, f.Message, f.Since.UTC().Format(time.RFC3339))
			out.LastError = &msg
		}
		return c.JSON(http.StatusOK, out)
	})
}
