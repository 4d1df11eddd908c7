// Rollout store routes (/api/v1/rollouts), wire-compatible with lance-context's worker API: the
// same paths, DTO field names, status codes and error envelope, so its clients can switch.
package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
)

var rolloutCodec = codec{schema: kinds.RolloutSchema, json: kinds.RolloutJSONColumns}

// CreateStoreRequest is the body of POST /api/v1/rollouts.
type CreateStoreRequest struct {
	Name           string            `json:"name"`
	StorageOptions map[string]string `json:"storage_options,omitempty"`
	// ExistOK answers 200 with the store when one of the same definition exists (Strata's own
	// clients create idempotently); without it a store of that name is 409 ALREADY_EXISTS, as in
	// lance-context. Also ?exist_ok=true.
	ExistOK bool `json:"exist_ok,omitempty"`
}

// StoreInfo describes a store.
type StoreInfo struct {
	Name    string          `json:"name"`
	URI     string          `json:"uri"`
	Version *uint64         `json:"version,omitempty"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// StoreList is a page of stores.
type StoreList struct {
	Stores     []StoreInfo `json:"stores"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// AppendResponse answers an append.
type AppendResponse struct {
	Version uint64   `json:"version"`
	IDs     []string `json:"ids,omitempty"`
	Count   int      `json:"count"`
}

// RecordsPage is a page of records.
type RecordsPage struct {
	Records    []json.RawMessage `json:"records"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// RecordResponse is one record (null when absent).
type RecordResponse struct {
	Record json.RawMessage `json:"record"`
}

// recordJSON answers a RecordResponse holding record, a JSON object the row encoder wrote (valid
// by construction): written around it as it is, not compacted and copied again by
// encoding/json, unless ?pretty asks for indentation.
func recordJSON(c echo.Context, record []byte) error {
	if _, pretty := c.QueryParams()["pretty"]; pretty {
		return c.JSON(http.StatusOK, RecordResponse{Record: record})
	}
	body := make([]byte, 0, len(record)+len(`{"record":}`)+1)
	body = append(append(append(body, `{"record":`...), record...), "}\n"...)
	return c.JSONBlob(http.StatusOK, body)
}

// registerRollouts registers the rollout kind's own routes (its registry routes:
// registerStoreRoutes).
func (h *handlers) registerRollouts(g *routeGroup) {
	g.POST("/rollouts/:name/records", h.addRollouts, h.preferredWorkers(catalog.KindRollout))
	g.GET("/rollouts/:name/records", h.listRollouts)
	g.GET("/rollouts/:name/records/:id", h.getRollout)
	g.DELETE("/rollouts/:name/records/:id", h.deleteRecord(catalog.KindRollout))
	g.GET("/rollouts/:name/records/:id/blob", h.getRolloutBlob)
	g.POST("/internal/merge-wal/:name", h.mergeWAL(catalog.KindRollout)) // lance-context's path
	g.POST("/rollouts/:name/compact", h.compact(catalog.KindRollout))
	g.POST("/rollouts/:name/checkout", h.checkout(catalog.KindRollout))
	g.GET("/rollouts/:name/compact/stats", h.compactStatsOf(catalog.KindRollout))
}

func (h *handlers) createRollout(c echo.Context) error {
	var req CreateStoreRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if len(req.StorageOptions) > 0 {
		if err := h.mayChooseStorage(c); err != nil {
			return err
		}
	}
	options, _ := json.Marshal(req.StorageOptions)
	if req.StorageOptions == nil {
		options = nil
	}
	st, created, err := h.deps.Stores.Create(c.Request().Context(), catalog.KindRollout, req.Name, nil, options)
	if err != nil {
		return err
	}
	return h.respondStore(c, catalog.KindRollout, st, created, req.ExistOK)
}

// respondStore answers a create: 201 when created; when a store of the same definition existed,
// 200 if the request allows it (exist_ok in the body or the query), else 409 ALREADY_EXISTS. The
// answer carries the store's base-table version (read as a get reads it: the store is opened).
func (h *handlers) respondStore(c echo.Context, kind catalog.Kind, st catalog.Store, created, existOK bool) error {
	if !created && !existOK && !queryFlag(c, "exist_ok") {
		return &APIError{Status: http.StatusConflict, Code: CodeAlreadyExists,
			Message: fmt.Sprintf("%s store %q already exists (create with \"exist_ok\": true to get the existing store)", kind, st.Name)}
	}
	info := StoreInfo{Name: st.Name, URI: h.deps.Stores.PublicURI(st), Schema: st.Schema}
	s, _, release, err := h.deps.Stores.AcquireEntry(c.Request().Context(), kind, st.Name)
	if err != nil {
		return err
	}
	defer release()
	v, err := tableVersion(c.Request().Context(), s)
	if err != nil {
		return err
	}
	info.Version = &v
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, info)
}

// rolloutColumns are the rollout schema's column positions.
var rolloutColumns = rolloutCodec.columnIndex()

// rolloutFill applies the rollout kind's defaults to one record (kinds.RolloutDefaults) and
// requires kinds.RolloutRequired. now is the request's time.
func rolloutFill(now time.Time) rowFill {
	col := func(name string) int { return rolloutColumns[name] }
	type fill struct {
		col, from int // from: the column copied, or -1
		value     []byte
	}
	var fills []fill
	for _, d := range kinds.RolloutDefaults {
		f := fill{col: col(d.Column), from: -1, value: d.JSON(now)}
		if d.From != "" {
			f.from = col(d.From)
		}
		fills = append(fills, f)
	}
	var required []int
	for _, name := range kinds.RolloutRequired {
		required = append(required, col(name))
	}
	return func(i int, row rowValues) error {
		absent := func(j int) bool { return row[j] == nil || isNull(row[j]) }
		for _, f := range fills {
			switch {
			case !absent(f.col):
			case f.from >= 0:
				if !absent(f.from) {
					row[f.col] = row[f.from]
				}
			default:
				row[f.col] = f.value
			}
		}
		for _, j := range required {
			if absent(j) {
				return rowError(i, rolloutCodec.schema.Field(j).Name, "required")
			}
		}
		return nil
	}
}

func (h *handlers) addRollouts(c echo.Context) error {
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if isArrowStream(ct) {
		return h.addRolloutsArrow(c)
	}
	fill := rolloutFill(time.Now())
	var rec arrow.RecordBatch
	switch {
	case isJSON(ct):
		// Streamed: rows go into the Arrow builders as the body arrives.
		var err error
		if rec, err = rolloutCodec.decodeRowsJSONFrom(c.Request().Body, bodySizeHint(c), "records", fill, h.mem); err != nil {
			return err
		}
	case isMultipart(ct):
		// Blob uploads reserve their declared length (the whole budget when unknown) first.
		release, err := h.blobs.reserve(c.Request().ContentLength)
		if err != nil {
			return err
		}
		defer release()
		r, err := c.Request().MultipartReader()
		if err != nil {
			return invalid("malformed multipart body: %v", err)
		}
		if rec, err = decodeMultipartRollouts(r, fill, h.mem, c.Request().ContentLength); err != nil {
			return err
		}
	default:
		return unsupportedMediaType(ct, echo.MIMEApplicationJSON, echo.MIMEMultipartForm, MIMEArrowStream)
	}
	defer rec.Release()
	ids := stringColumn(rec, "id")
	return h.withStore(c, catalog.KindRollout, func(s *lsm.Store) error {
		if err := h.appendRecord(c.Request().Context(), catalog.KindRollout, c.Param("name"), s, rec, flushRequested(c)); err != nil {
			return err
		}
		v, err := tableVersion(c.Request().Context(), s)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, AppendResponse{Version: v, IDs: ids, Count: len(ids)})
	})
}

// rolloutFilters parses ?filters=: a JSON object of exact matches on lance-context's filterable
// columns, or a SQL predicate over any scalar column.
func rolloutFilters(c echo.Context, s *lsm.Store) (rowFilter, error) {
	return parseRowFilter(c.QueryParam("filters"), s, rolloutEqualities)
}

// rolloutEqualities parses {"col": value} against the filterable columns.
func rolloutEqualities(raw string) (map[string]any, error) {
	var in map[string]any
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, invalid("filters must be a JSON object: %v", err)
	}
	for k, v := range in {
		want, ok := kinds.RolloutFilterColumns[k]
		if !ok {
			return nil, invalid("cannot filter on %q (filterable: %s)", k, strings.Join(slices.Sorted(maps.Keys(kinds.RolloutFilterColumns)), ", "))
		}
		switch v.(type) {
		case string:
			if want != "string" {
				return nil, invalid("filter %q wants a %s", k, want)
			}
		case bool:
			if want != "bool" {
				return nil, invalid("filter %q wants a %s", k, want)
			}
		default:
			return nil, invalid("filter %q wants a %s", k, want)
		}
	}
	return in, nil
}

func (h *handlers) listRollouts(c echo.Context) error {
	limit, offset, cursor, err := pageParams(c)
	if err != nil {
		return err
	}
	return h.withStore(c, catalog.KindRollout, func(s *lsm.Store) error {
		filters, err := rolloutFilters(c, s)
		if err != nil {
			return err
		}
		at, err := h.readPointParam(c, catalog.KindRollout)
		if err != nil {
			return err
		}
		rec, next, err := h.page(c.Request().Context(), s, columnsExcept(s, map[string]bool{"binary_payload": true}), filters, limit, offset, cursor, at)
		if err != nil {
			return err
		}
		defer rec.Release()
		if wantsArrow(c) {
			return writeArrow(c, rec, next, h.mem)
		}
		return rolloutCodec.writePage(c, "records", rec, kinds.RolloutAlwaysPresent, next) // RecordsPage, streamed
	})
}

func (h *handlers) getRollout(c echo.Context) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	return h.withStore(c, catalog.KindRollout, func(s *lsm.Store) error {
		at, err := h.readPointParam(c, catalog.KindRollout)
		if err != nil {
			return err
		}
		rec, err := getAt(c.Request().Context(), s, at, id, columnsExcept(s, map[string]bool{"binary_payload": true}))
		if err != nil {
			return err
		}
		if rec == nil {
			return c.JSON(http.StatusOK, RecordResponse{Record: json.RawMessage("null")})
		}
		defer rec.Release()
		return recordJSON(c, rolloutCodec.encode(rec, kinds.RolloutAlwaysPresent)[0])
	})
}

func (h *handlers) getRolloutBlob(c echo.Context) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	return h.withStore(c, catalog.KindRollout, func(s *lsm.Store) error {
		at, err := h.readPointParam(c, catalog.KindRollout)
		if err != nil {
			return err
		}
		rec, err := getAt(c.Request().Context(), s, at, id, []string{"binary_payload"})
		if err != nil {
			return err
		}
		if rec == nil {
			return notFound("record %q not found", id)
		}
		defer rec.Release()
		col := rec.Column(0)
		if col.IsNull(0) {
			return notFound("record %q has no binary payload", id)
		}
		data := valueBytes(col)
		release, err := h.blobs.reserve(int64(len(data)))
		if err != nil {
			return err
		}
		defer release()
		return c.Blob(http.StatusOK, echo.MIMEOctetStream, data)
	})
}

// DeleteResponse answers a record delete.
type DeleteResponse struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

func (h *handlers) deleteRecord(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := idParam(c)
		if err != nil {
			return err
		}
		return h.withStore(c, kind, func(s *lsm.Store) error {
			if _, err := s.Delete(c.Request().Context(), []string{id}); err != nil {
				return err
			}
			if flushRequested(c) {
				if err := h.deps.Stores.Flush(c.Request().Context(), kind, c.Param("name"), s); err != nil {
					return err
				}
			}
			return c.JSON(http.StatusOK, DeleteResponse{Deleted: true, ID: id})
		})
	}
}

// addRolloutsArrow appends an Arrow IPC stream of rollout columns.
func (h *handlers) addRolloutsArrow(c echo.Context) error {
	name := c.Param("name")
	if err := catalog.ValidateName(name); err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	rec, err := h.readArrowBody(c, body)
	if err != nil {
		return err
	}
	defer rec.Release()
	if err := checkJSONColumns(rec, kinds.RolloutJSONColumns); err != nil {
		return err
	}
	withDefaults, err := withRolloutDefaults(rec, h.mem)
	if err != nil {
		return err
	}
	defer withDefaults.Release()
	return h.withStore(c, catalog.KindRollout, func(s *lsm.Store) error {
		full, err := conformNumericColumns(withDefaults, s.Schema(), h.mem)
		if err != nil {
			return err
		}
		defer full.Release()
		if err := h.admitAppend(c.Request().Context(), c.Param("name"), full); err != nil {
			return err
		}
		if _, err := s.Append(c.Request().Context(), full); err != nil {
			return err
		}
		if flushRequested(c) {
			if err := h.deps.Stores.Flush(c.Request().Context(), catalog.KindRollout, c.Param("name"), s); err != nil {
				return err
			}
		}
		v, err := tableVersion(c.Request().Context(), s)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, AppendResponse{Version: v, IDs: stringColumn(full, "id"), Count: int(full.NumRows())})
	})
}

// CheckoutRequest is the body of POST .../checkout.
type CheckoutRequest struct {
	Version uint64 `json:"version"`
}

// checkout confirms that a base-table version is retained and readable. Reads pin it
// with ?version=N (read-only, without the WAL); nothing is pinned on the server, so one client's
// checkout never changes what another client reads.
func (h *handlers) checkout(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req CheckoutRequest
		if err := decodeBody(c, &req); err != nil {
			return err
		}
		if req.Version == 0 {
			return invalid("version must be a positive integer")
		}
		return h.withStore(c, kind, func(s *lsm.Store) error {
			if _, err := s.TableVersion(c.Request().Context(), req.Version); err != nil {
				return err
			}
			return c.JSON(http.StatusOK, CheckoutRequest{Version: req.Version})
		})
	}
}

// versionParam reads ?version= (0 when absent: the live view).
func versionParam(c echo.Context) (uint64, error) {
	v := c.QueryParam("version")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, invalid("version must be a positive integer")
	}
	return n, nil
}
