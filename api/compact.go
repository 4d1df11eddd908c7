// Compaction routes for rollout stores (lance-context compatible): run a compaction of the base
// table now, and report its compaction state. Scheduled compaction belongs to the maintenance
// workflows; this is the manual lever.
package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/table"
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

func (h *handlers) compactRollouts(c echo.Context) error {
	var req CompactRequest
	if c.Request().ContentLength != 0 {
		if err := decodeBody(c, &req); err != nil {
			return err
		}
	}
	if req.TargetRowsPerFragment < 0 {
		return invalid("target_rows_per_fragment must be positive")
	}
	return h.withStore(c, catalog.KindRollout, func(s *lsm.Store) error {
		cfg := table.CompactionConfig{MinFragments: 2, TargetRowsPerFragment: req.TargetRowsPerFragment}
		if req.MaterializeDeletions != nil && !*req.MaterializeDeletions {
			cfg.DeletionRatio = 1.01 // never rewrite a fragment for its deletions alone
		}
		res, err := s.Compact(c.Request().Context(), lsm.CompactOptions{Compaction: cfg})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, CompactResponse{FragmentsRemoved: res.FragmentsRemoved, FragmentsAdded: res.FragmentsAdded,
			FilesRemoved: res.FragmentsRemoved, FilesAdded: res.FragmentsAdded})
	})
}

func (h *handlers) compactStats(c echo.Context) error {
	return h.withStore(c, catalog.KindRollout, func(s *lsm.Store) error {
		m, err := s.TableManifest(c.Request().Context())
		if err != nil {
			return err
		}
		out := CompactStats{TotalFragments: len(m.Fragments), TotalCompactions: m.Counters.Compactions}
		if m.LastCompactAt != nil {
			t := m.LastCompactAt.UTC().Format(time.RFC3339Nano)
			out.LastCompaction = &t
		}
		return c.JSON(http.StatusOK, out)
	})
}
