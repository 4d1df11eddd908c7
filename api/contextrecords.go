// Context records (lance-context's record routes): add, upsert by external id, update (the
// successor supersedes the original), delete by id or external id, get, list with filters, related
// records and payload download. Every write is one batch of rows — the records, the originals
// they supersede, and the claim rows of their external ids — validated whole before anything is
// appended.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/contexts"
)

func (h *handlers) addContextRecords(c echo.Context) error {
	var req contexts.AddRecordsRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if len(req.Records) == 0 {
		return invalid("records array must not be empty")
	}
	if len(req.Records) > contexts.MaxRecordsPerRequest {
		return invalid("%d records, over the limit of %d a request", len(req.Records), contexts.MaxRecordsPerRequest)
	}
	return h.withContext(c, func(cs contextStore) error {
		now, runID := contextNow(), uuid.NewString()
		rows := make([]contexts.Record, 0, len(req.Records))
		ids := make([]string, 0, len(req.Records))
		xids := map[string]bool{}
		for i, a := range req.Records {
			rec, err := cs.rules().NewRecord(a, newRecordID(), runID, now)
			if err != nil {
				return invalid("records[%d]: %v", i, err)
			}
			if rec.ExternalID != nil {
				if xids[*rec.ExternalID] {
					return invalid("records[%d]: external_id %q appears twice in the request", i, *rec.ExternalID)
				}
				xids[*rec.ExternalID] = true
			}
			rows = append(rows, rec)
			ids = append(ids, rec.ID)
		}
		if len(xids) > 0 {
			unlock := lockContext(cs.entry.Name)
			defer unlock()
			for i := range req.Records {
				xid := rows[i].ExternalID
				if xid == nil {
					continue
				}
				held, err := byExternalID(c.Request().Context(), cs.s, *xid)
				if err != nil {
					return err
				}
				if held != nil && held.SupersededByID == nil {
					return &APIError{Status: http.StatusConflict, Code: CodeAlreadyExists,
						Message: "external_id " + strconv.Quote(*xid) + " is held by record " + held.ID + " (upsert with PUT .../records to replace it)"}
				}
				rows = append(rows, contexts.Claim(*xid, rows[i].ID, now))
			}
		}
		v, err := h.writeContextRows(c, cs, rows)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, AppendResponse{Version: v, IDs: ids, Count: len(ids)})
	})
}

// upsertKey checks an upsert's key (lance-context takes external_id only).
func upsertKey(key string) error {
	if key != "" && key != "external_id" {
		return invalid("upsert key %q is not supported; use 'external_id'", key)
	}
	return nil
}

// upsertRows builds the rows of one upsert: the new record, the original it replaces (now
// superseded) and the claim of its external id.
func upsertRows(c echo.Context, cs contextStore, a contexts.AddRecord, runID string) (contexts.UpsertResult, []contexts.Record, error) {
	if a.ExternalID == nil || *a.ExternalID == "" {
		return contexts.UpsertResult{}, nil, invalid("upsert requires record.external_id")
	}
	now := contextNow()
	rec, err := cs.rules().NewRecord(a, newRecordID(), runID, now)
	if err != nil {
		return contexts.UpsertResult{}, nil, invalid("%v", err)
	}
	held, err := byExternalID(c.Request().Context(), cs.s, *a.ExternalID)
	if err != nil {
		return contexts.UpsertResult{}, nil, err
	}
	res := contexts.UpsertResult{Inserted: true}
	rows := []contexts.Record{rec}
	if held != nil && held.SupersededByID == nil {
		res.Inserted = false
		res.ReplacedID = &held.ID
		rec.SupersedesID = &held.ID
		rows[0] = rec
		old := *held
		old.SupersededByID = &rec.ID
		rows = append(rows, old)
	}
	rows = append(rows, contexts.Claim(*a.ExternalID, rec.ID, now))
	res.Record = rec
	return res, rows, nil
}

func (h *handlers) upsertContextRecord(c echo.Context) error {
	var req contexts.UpsertRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if err := upsertKey(req.Key); err != nil {
		return err
	}
	return h.withContext(c, func(cs contextStore) error {
		defer lockContext(cs.entry.Name)()
		res, rows, err := upsertRows(c, cs, req.Record, uuid.NewString())
		if err != nil {
			return err
		}
		v, err := h.writeContextRows(c, cs, rows)
		if err != nil {
			return err
		}
		status := http.StatusOK
		if res.Inserted {
			status = http.StatusCreated
		}
		return c.JSON(status, contexts.UpsertResponse{Version: v, UpsertResult: res})
	})
}

func (h *handlers) upsertContextRecords(c echo.Context) error {
	var req contexts.UpsertBatchRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if err := upsertKey(req.Key); err != nil {
		return err
	}
	if len(req.Records) == 0 {
		return invalid("records array must not be empty")
	}
	if len(req.Records) > contexts.MaxRecordsPerRequest {
		return invalid("%d records, over the limit of %d a request", len(req.Records), contexts.MaxRecordsPerRequest)
	}
	seen := map[string]bool{}
	for i, a := range req.Records {
		if a.ExternalID == nil || *a.ExternalID == "" {
			return invalid("records[%d]: upsert requires external_id", i)
		}
		if seen[*a.ExternalID] {
			return invalid("records[%d]: external_id %q appears twice in the request", i, *a.ExternalID)
		}
		seen[*a.ExternalID] = true
	}
	return h.withContext(c, func(cs contextStore) error {
		defer lockContext(cs.entry.Name)()
		runID := uuid.NewString()
		out := contexts.UpsertBatchResponse{Results: make([]contexts.UpsertResult, 0, len(req.Records))}
		var rows []contexts.Record
		for i, a := range req.Records {
			res, rs, err := upsertRows(c, cs, a, runID)
			if err != nil {
				if e, ok := err.(*APIError); ok && e.Status == http.StatusBadRequest {
					return invalid("records[%d]: %s", i, e.Message)
				}
				return err
			}
			out.Results = append(out.Results, res)
			rows = append(rows, rs...)
		}
		v, err := h.writeContextRows(c, cs, rows)
		if err != nil {
			return err
		}
		out.Version = v
		return c.JSON(http.StatusOK, out)
	})
}

// currentRecord is the record an update or delete addresses: by id, or the holder of an external
// id; nil when there is none, or when it has a successor already (only the newest version of a
// record can be updated).
func currentRecord(c echo.Context, cs contextStore, id, xid *string) (*contexts.Record, error) {
	ctx := c.Request().Context()
	var rec *contexts.Record
	var err error
	switch {
	case id != nil:
		rec, err = recordByID(ctx, cs, *id, pageSource{})
	case xid != nil:
		rec, err = byExternalID(ctx, cs.s, *xid)
	}
	if err != nil || rec == nil || rec.SupersededByID != nil {
		return nil, err
	}
	return rec, nil
}

func (h *handlers) updateContextRecord(c echo.Context) error {
	var req contexts.UpdateRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	switch {
	case req.Patch.Empty():
		return invalid("update requires at least one patch field")
	case req.ID == nil && req.ExternalID == nil:
		return invalid("update requires either id or external_id")
	case req.ID != nil && req.ExternalID != nil:
		return invalid("update accepts only one of id or external_id")
	}
	return h.withContext(c, func(cs contextStore) error {
		defer lockContext(cs.entry.Name)()
		orig, err := currentRecord(c, cs, req.ID, req.ExternalID)
		if err != nil {
			return err
		}
		if orig == nil {
			v, err := tableVersion(c.Request().Context(), cs.s)
			if err != nil {
				return err
			}
			return c.JSON(http.StatusOK, contexts.UpdateResponse{Version: v})
		}
		now := contextNow()
		next, err := cs.rules().Apply(*orig, req.Patch, newRecordID(), now)
		if err != nil {
			return invalid("patch: %v", err)
		}
		old := *orig
		old.SupersededByID = &next.ID
		rows := []contexts.Record{next, old}
		if next.ExternalID != nil {
			rows = append(rows, contexts.Claim(*next.ExternalID, next.ID, now))
		}
		v, err := h.writeContextRows(c, cs, rows)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, contexts.UpdateResponse{Version: v, Updated: true, ReplacedID: &orig.ID, Record: &next})
	})
}

// deleteContext tombstones the record (and its external id's claim, when the claim names it).
func (h *handlers) deleteContext(c echo.Context, id, xid *string) error {
	return h.withContext(c, func(cs contextStore) error {
		defer lockContext(cs.entry.Name)()
		ctx := c.Request().Context()
		var rec *contexts.Record
		var err error
		if id != nil {
			rec, err = recordByID(ctx, cs, *id, pageSource{})
		} else {
			rec, err = byExternalID(ctx, cs.s, *xid)
		}
		if err != nil {
			return err
		}
		if rec != nil {
			keys := []string{rec.ID}
			if xid != nil {
				keys = append(keys, contexts.ClaimKey(*xid)) // found through the claim: it names rec
			} else if rec.ExternalID != nil {
				if held, err := byExternalID(ctx, cs.s, *rec.ExternalID); err != nil {
					return err
				} else if held != nil && held.ID == rec.ID {
					keys = append(keys, contexts.ClaimKey(*rec.ExternalID))
				}
			}
			if _, err := cs.s.Delete(ctx, keys); err != nil {
				return err
			}
			if flushRequested(c) {
				if err := h.deps.Stores.Flush(ctx, cs.entry.Kind, cs.entry.Name, cs.s); err != nil {
					return err
				}
			}
		}
		v, err := tableVersion(ctx, cs.s)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, contexts.DeleteResponse{Deleted: rec != nil, Version: v})
	})
}

func (h *handlers) deleteContextRecord(c echo.Context) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	return h.deleteContext(c, &id, nil)
}

func (h *handlers) deleteContextRecordByExternalID(c echo.Context) error {
	xid, err := externalIDParam(c)
	if err != nil {
		return err
	}
	return h.deleteContext(c, nil, &xid)
}

// externalIDParam reads ?external_id= (required, non-empty).
func externalIDParam(c echo.Context) (string, error) {
	xid := c.QueryParam("external_id")
	if xid == "" {
		return "", invalid("external_id is required")
	}
	if len(xid) > contexts.MaxIDBytes {
		return "", invalid("external_id is over %d bytes", contexts.MaxIDBytes)
	}
	return xid, nil
}

func (h *handlers) getContextRecord(c echo.Context) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	at, err := h.readPointParam(c, catalog.KindContext)
	if err != nil {
		return err
	}
	return h.withContext(c, func(cs contextStore) error {
		rec, err := recordByID(c.Request().Context(), cs, id, at)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, contexts.RecordResponse{Record: rec})
	})
}

// recordByID is the record of id at a read point (the live view: pageSource{}), whatever its
// lifecycle (nil when absent, or when id names a claim row, which is never a record).
func recordByID(ctx context.Context, cs contextStore, id string, at pageSource) (*contexts.Record, error) {
	if !contexts.IsRecordID(id) {
		return nil, nil
	}
	return getContextRow(ctx, cs.s, id, at)
}

func (h *handlers) getContextRecordByExternalID(c echo.Context) error {
	xid, err := externalIDParam(c)
	if err != nil {
		return err
	}
	return h.withContext(c, func(cs contextStore) error {
		rec, err := byExternalID(c.Request().Context(), cs.s, xid)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, contexts.RecordResponse{Record: rec})
	})
}

// getContextPayload answers a record's payload: its binary payload, else its text, with the
// record's content type.
func (h *handlers) getContextPayload(c echo.Context) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	return h.withContext(c, func(cs contextStore) error {
		rec, err := recordByID(c.Request().Context(), cs, id, pageSource{})
		if err != nil {
			return err
		}
		switch {
		case rec == nil:
			return notFound("record %q not found", id)
		case rec.BinaryPayload != nil:
			return c.Blob(http.StatusOK, payloadContentType(rec.ContentType, "application/octet-stream"), rec.BinaryPayload)
		case rec.TextPayload != nil:
			return c.Blob(http.StatusOK, payloadContentType(rec.ContentType, "text/plain; charset=utf-8"), []byte(*rec.TextPayload))
		}
		return notFound("record %q has no payload", id)
	})
}

// payloadContentType is a record's content type as a response header: the stored one when it
// parses as a media type, else fallback (a stored value never becomes a malformed header).
func payloadContentType(ct, fallback string) string {
	if _, _, err := mime.ParseMediaType(ct); err != nil || strings.ContainsAny(ct, "\r\n") {
		return fallback
	}
	return ct
}

// lifecycleParams reads ?include_expired and ?include_retired.
func lifecycleParams(c echo.Context) contexts.Lifecycle {
	return contexts.Lifecycle{IncludeExpired: queryFlag(c, "include_expired"), IncludeRetired: queryFlag(c, "include_retired"), Now: contextNow()}
}

// listContextRecords answers GET .../records: visible records matching ?filters= in id order
// (creation order), ?offset= of them skipped, at most ?limit= (default 100). A checkout reads
// with ?version=N (the base table at that version, without the WAL).
func (h *handlers) listContextRecords(c echo.Context) error {
	limit, offset, _, err := pageParams(c)
	if err != nil {
		return err
	}
	at, err := h.readPointParam(c, catalog.KindContext)
	if err != nil {
		return err
	}
	filters, err := contexts.ParseFilters(json.RawMessage(c.QueryParam("filters")))
	if err != nil {
		return invalid("filters: %v", err)
	}
	life := lifecycleParams(c)
	return h.withContext(c, func(cs contextStore) error {
		recs, err := collectRecords(c.Request().Context(), cs, filters.Fields, at, offset, limit,
			func(r *contexts.Record) bool { return life.Visible(r) && filters.Match(r) })
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, contexts.RecordsResponse{Records: recs})
	})
}

// listColumns are what lists, related records, search and retrieve read and answer: every column
// but binary_payload (one record's may be 16 MiB; GET .../records/{id} and .../payload answer it,
// payload_size tells its length).
var listColumns = contextColumnsWithout("binary_payload")

// collectRecords scans the store's records in id order (fields: equalities the scan applies;
// version: a checkout, 0 the live view), skips offset of those keep accepts and answers up to
// limit of the next (never null: an empty list answers []).
func collectRecords(ctx context.Context, cs contextStore, fields map[string]string, at pageSource, offset, limit int, keep func(*contexts.Record) bool) ([]contexts.Record, error) {
	out := []contexts.Record{}
	err := scanContext(ctx, cs.s, listColumns, fields, at, func(page []contexts.Record) error {
		for i := range page {
			if !keep(&page[i]) {
				continue
			}
			if offset > 0 {
				offset--
				continue
			}
			out = append(out, page[i])
			if len(out) == limit {
				return errPageFull
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	return out, nil
}

// errPageFull stops a scan whose answer is complete (never returned to a caller).
var errPageFull = errors.New("page full")

// relatedContextRecords answers GET .../records/related?target_id=&relation=&limit=: visible
// records with a relationship to target_id (of that relation, when given).
func (h *handlers) relatedContextRecords(c echo.Context) error {
	target := c.QueryParam("target_id")
	if target == "" {
		return invalid("target_id is required")
	}
	relation := c.QueryParam("relation")
	limit, _, _, err := pageParams(c)
	if err != nil {
		return err
	}
	life := lifecycleParams(c)
	return h.withContext(c, func(cs contextStore) error {
		recs, err := collectRecords(c.Request().Context(), cs, nil, pageSource{}, 0, limit,
			func(r *contexts.Record) bool { return life.Visible(r) && relates(r, target, relation) })
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, contexts.RecordsResponse{Records: recs})
	})
}

func relates(rec *contexts.Record, target, relation string) bool {
	for _, r := range rec.Relationships {
		if r.TargetID == target && (relation == "" || r.Relation == relation) {
			return true
		}
	}
	return false
}
