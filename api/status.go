// The admin status route (GET /api/v1/admin/status): what `strata status` shows — each store's
// maintenance state from the catalog's stats, and the stores whose maintenance is failing — so a
// user needs only the API's URL, not the catalog's.
package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
)

// StoreStatus is one store's maintenance state (observed false: no stats reported yet).
type StoreStatus struct {
	Kind                  catalog.Kind `json:"kind"`
	Name                  string       `json:"name"`
	Observed              bool         `json:"observed"`
	PendingGenerations    int          `json:"pending_generations"`
	OldestPendingAt       *time.Time   `json:"oldest_pending_at,omitempty"`
	Fragments             int          `json:"fragments"`
	IndexCoveredFragments int          `json:"index_covered_fragments"`
	BaseRows              int64        `json:"base_rows"`
	DeletedRows           int64        `json:"deleted_rows"`
	TableVersion          int64        `json:"table_version"`
	LastMergeAt           *time.Time   `json:"last_merge_at,omitempty"`
	LastCompactAt         *time.Time   `json:"last_compact_at,omitempty"`
	LastCleanupAt         *time.Time   `json:"last_cleanup_at,omitempty"`
	GarbageBytes          int64        `json:"garbage_bytes"`
	StatsUpdatedAt        *time.Time   `json:"stats_updated_at,omitempty"`
	// Shards: the store's write shards (one per worker that appended) with stats.
	Shards int `json:"shards"`
}

// MaintenanceFailure is one failing maintenance operation of a store.
type MaintenanceFailure struct {
	Kind         catalog.Kind `json:"kind"`
	Name         string       `json:"name"`
	Op           string       `json:"op"`
	ErrorType    string       `json:"error_type"`
	Message      string       `json:"message"`
	FailingSince time.Time    `json:"failing_since"`
	LastFailedAt time.Time    `json:"last_failed_at"`
	Failures     int          `json:"failures"`
}

// StatusResponse answers GET /api/v1/admin/status.
type StatusResponse struct {
	Stores   []StoreStatus        `json:"stores"`
	Failures []MaintenanceFailure `json:"failures"`
}

func (h *handlers) status(c echo.Context) error {
	ctx := c.Request().Context()
	var kind catalog.Kind
	if v := c.QueryParam("kind"); v != "" {
		var err error
		if kind, err = catalog.ParseKind(v); err != nil {
			return err
		}
	}
	limit, err := adminLimit(c)
	if err != nil {
		return err
	}
	cat := h.deps.Stores.Catalog()
	failures, err := cat.ListFailures(ctx, limit)
	if err != nil {
		return err
	}
	out := StatusResponse{Stores: []StoreStatus{}, Failures: failureDTOs(failures)}
	if !queryFlag(c, "failing") {
		st, err := cat.ListStoreStatus(ctx, kind, catalog.ListOptions{Prefix: c.QueryParam("prefix"), Limit: limit})
		if err != nil {
			return err
		}
		for _, s := range st {
			d := StoreStatus{Kind: s.Kind, Name: s.Name, Shards: s.Shards}
			if x := s.Stats; x != nil {
				updated := x.UpdatedAt
				d.Observed, d.PendingGenerations, d.OldestPendingAt, d.Fragments = true, x.PendingGenerations, x.OldestPendingAt, x.Fragments
				d.IndexCoveredFragments, d.BaseRows, d.DeletedRows, d.TableVersion = x.IndexCoveredFragments, x.BaseRows, x.DeletedRows, x.TableVersion
				d.LastMergeAt, d.LastCompactAt, d.LastCleanupAt, d.GarbageBytes, d.StatsUpdatedAt = x.LastMergeAt, x.LastCompactAt, x.LastCleanupAt, x.GarbageBytes(), &updated
			}
			out.Stores = append(out.Stores, d)
		}
	}
	return c.JSON(http.StatusOK, out)
}

// adminLimit reads an admin listing's ?limit= (1..10000, default 100).
func adminLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10_000 {
		return 0, invalid("limit must be an integer between 1 and 10000")
	}
	return n, nil
}

// failureDTOs are the catalog's failures as the API answers them.
func failureDTOs(failures []catalog.MaintenanceFailure) []MaintenanceFailure {
	out := make([]MaintenanceFailure, 0, len(failures))
	for _, f := range failures {
		out = append(out, MaintenanceFailure{Kind: f.Kind, Name: f.Name, Op: f.Op, ErrorType: f.ErrorType,
			Message: f.Message, FailingSince: f.Since, LastFailedAt: f.LastAt, Failures: f.Failures})
	}
	return out
}
