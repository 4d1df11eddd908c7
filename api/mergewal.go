// The merge-wal routes (lance-context compatible): POST /api/v1/internal/merge-wal/{name} for
// rollout stores and POST /api/v1/generic/{name}/merge-wal. Each seals this worker's shard of the
// store, then folds the store's pending generations into its base table — as a request of the
// store's maintenance workflow (update-with-start, answered when it has run: serial with the
// store's other maintenance), or in the handler when no maintenance worker serves the queue
// (commits are compare-and-swaps, so that stays safe) — and answers {reclaimed: generations
// merged}.
package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/workflows"
)

// MergeWALResponse answers a merge-wal request: how many sealed generations were folded into
// the base table.
type MergeWALResponse struct {
	Reclaimed int `json:"reclaimed"`
}

func (h *handlers) mergeWAL(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := c.Param("name")
		return h.withStore(c, kind, func(s *lsm.Store) error {
			ctx := c.Request().Context()
			if err := h.deps.Stores.Flush(ctx, kind, name, s); err != nil {
				return err
			}
			if h.maintenanceAvailable(ctx) {
				res, err := h.deps.Maintenance.Run(ctx, workflows.StoreRef{Kind: kind, Name: name}, workflows.Request{Op: workflows.OpMergeWAL})
				if err != nil {
					return maintenanceError(string(workflows.OpMergeWAL), name, err)
				}
				return c.JSON(http.StatusOK, MergeWALResponse{Reclaimed: res.GenerationsMerged})
			}
			sum, err := s.Merge(ctx, lsm.MergeOptions{}, 0)
			if err != nil {
				return err
			}
			return c.JSON(http.StatusOK, MergeWALResponse{Reclaimed: sum.Generations})
		})
	}
}
