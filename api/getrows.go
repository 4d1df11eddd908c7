// Batch reads: POST /api/v1/generic/{name}/get-rows and /api/v1/rollouts/{name}/get-rows
// {"ids": [...], "columns": [...]} answer the newest live row of each id (up to maxGetRowsIDs
// ids, read in one snapshot), in the order the ids were asked, ids without a row left out —
// lance-context's batch read. A rollout store's answer is {"records": [...]}, a generic store's
// {"rows": [...]}, each row as its single-row get encodes it.
package api

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/lsm"
)

// maxGetRowsIDs is the most ids one batch read asks for.
const maxGetRowsIDs = 1024

// GetRowsRequest is the body of the batch read.
type GetRowsRequest struct {
	IDs     []string `json:"ids"`
	Columns []string `json:"columns,omitempty"` // the columns to read (default: all but blobs); the key is always read
}

func (h *handlers) getRows(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req GetRowsRequest
		if err := decodeBody(c, &req); err != nil {
			return err
		}
		if len(req.IDs) > maxGetRowsIDs {
			return invalid("ids: at most %d ids in one batch read, not %d", maxGetRowsIDs, len(req.IDs))
		}
		ids := make([]string, 0, len(req.IDs))
		seen := make(map[string]bool, len(req.IDs))
		for _, id := range req.IDs {
			if id == "" {
				return invalid("ids must be non-empty strings")
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		return h.withStoreEntry(c, kind, func(s *lsm.Store, st catalog.Store) error {
			columns, err := rowColumns(s, st, kind, req.Columns)
			if err != nil {
				return err
			}
			at, err := h.readPointParam(c, kind)
			if err != nil {
				return err
			}
			rec, err := h.readRows(c, s, ids, columns, at)
			if err != nil {
				return err
			}
			defer rec.Release()
			if kind == catalog.KindRollout {
				return rolloutCodec.writePage(c, "records", rec, kinds.RolloutAlwaysPresent, "")
			}
			return genericCodec(s).writePage(c, "rows", rec, nil, "")
		})
	}
}

// rowColumns is what a row read returns (a batch read, a generic row's get): the asked columns
// with the key first, or every user column but blobs.
func rowColumns(s *lsm.Store, st catalog.Store, kind catalog.Kind, asked []string) ([]string, error) {
	if len(asked) > 0 {
		out := []string{s.KeyColumn()}
		for _, c := range asked {
			if c == "" || strings.HasPrefix(c, "_") || len(s.Schema().FieldIndices(c)) == 0 {
				return nil, invalid("columns: the store has no column %q", c)
			}
			if c != s.KeyColumn() && !contains(out, c) {
				out = append(out, c)
			}
		}
		return out, nil
	}
	if kind == catalog.KindRollout {
		return columnsExcept(s, map[string]bool{"binary_payload": true}), nil
	}
	spec, err := genericSpec(st)
	if err != nil {
		return nil, err
	}
	return columnsExcept(s, spec.Blobs), nil
}

// readRows reads the ids' rows in one snapshot (or at a read token's cut, or a table version), in
// the order of ids, the ids without a live row left out.
func (h *handlers) readRows(c echo.Context, s *lsm.Store, ids, columns []string, at pageSource) (arrow.RecordBatch, error) {
	if len(ids) == 0 {
		return h.emptyBatch(s, columns), nil
	}
	if at.cut != nil || at.version != 0 {
		return h.readRowsAt(c, s, ids, columns, at)
	}
	rec, found, err := s.GetSearched(c.Request().Context(), ids, columns)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	order := make([]int64, 0, len(ids))
	for _, row := range found {
		if row >= 0 {
			order = append(order, int64(row))
		}
	}
	return arrowutil.Take(c.Request().Context(), h.mem, rec, order)
}

// readRowsAt is readRows at a cut or a table version: a point read per id (both are fixed states,
// so the reads agree without sharing a snapshot).
func (h *handlers) readRowsAt(c echo.Context, s *lsm.Store, ids, columns []string, at pageSource) (arrow.RecordBatch, error) {
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for _, id := range ids {
		rec, err := getAt(c.Request().Context(), s, at, id, columns)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			parts = append(parts, rec)
		}
	}
	if len(parts) == 0 {
		return h.emptyBatch(s, columns), nil
	}
	return arrowutil.Concat(parts[0].Schema(), parts, h.mem)
}
