// Generic store routes (/api/v1/generic): a schema declared at creation (validated before
// anything is created), JSON rows keyed by column name, newest write per id wins.
package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
)

// CreateGenericRequest is the body of POST /api/v1/generic.
type CreateGenericRequest struct {
	Name           string            `json:"name"`
	Schema         json.RawMessage   `json:"schema"`
	StorageOptions map[string]string `json:"storage_options,omitempty"`
	SealOnAdd      bool              `json:"seal_on_add,omitempty"`
	ExistOK        bool              `json:"exist_ok,omitempty"` // see CreateStoreRequest
}

// RowsPage is a page of generic rows.
type RowsPage struct {
	Rows       []json.RawMessage `json:"rows"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// genericOptions are the options persisted in the catalog.
type genericOptions struct {
	StorageOptions map[string]string `json:"storage_options,omitempty"`
	SealOnAdd      bool              `json:"seal_on_add,omitempty"`
}

// registerGeneric registers the generic kind's own routes (its registry routes:
// registerStoreRoutes).
func (h *handlers) registerGeneric(g *routeGroup) {
	g.POST("/generic/:name/rows", h.addGenericRows, h.preferredWorkers(catalog.KindGeneric))
	g.GET("/generic/:name/rows", h.listGenericRows)
	g.GET("/generic/:name/rows/:id", h.getGenericRow)
	g.DELETE("/generic/:name/rows/:id", h.deleteRecord(catalog.KindGeneric))
}

func (h *handlers) createGeneric(c echo.Context) error {
	var req CreateGenericRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if len(req.Schema) == 0 {
		return invalid("schema is required")
	}
	if len(req.StorageOptions) > 0 {
		if err := h.mayChooseStorage(c); err != nil {
			return err
		}
	}
	options, _ := json.Marshal(genericOptions{StorageOptions: req.StorageOptions, SealOnAdd: req.SealOnAdd})
	st, created, err := h.deps.Stores.Create(c.Request().Context(), catalog.KindGeneric, req.Name, req.Schema, options)
	if err != nil {
		return err
	}
	return h.respondStore(c, catalog.KindGeneric, st, created, req.ExistOK)
}

// genericCodec is the codec of a generic store's schema.
func genericCodec(s *lsm.Store) codec {
	var fields = s.Schema().Fields()
	user := fields[:0:0]
	for _, f := range fields {
		if !strings.HasPrefix(f.Name, "_") {
			user = append(user, f)
		}
	}
	return codec{schema: arrowSchema(user), timestampMicros: true}
}

// genericSpecs keeps what a generic store's schema spec says beyond its Arrow schema (vector
// dimensions, blob columns), by store id (a store's spec never changes), so that a point read does
// not parse its store's spec again. Bounded by the spec bytes it has parsed (at most
// maxGenericSpecBytes, a spec being larger than what is kept of it) and by entries; it starts
// over past either.
var genericSpecs struct {
	mu    sync.Mutex // guards m and bytes
	m     map[uuid.UUID]kinds.GenericSpec
	bytes int
}

const (
	maxGenericSpecs     = 4096
	maxGenericSpecBytes = 16 << 20
)

// genericSpec is the parsed schema spec of generic store st, without its Arrow schema (the
// store's handle has that).
func genericSpec(st catalog.Store) (kinds.GenericSpec, error) {
	genericSpecs.mu.Lock()
	spec, ok := genericSpecs.m[st.ID]
	genericSpecs.mu.Unlock()
	if ok {
		return spec, nil
	}
	parsed, err := kinds.ParseGenericSpec(st.Schema)
	if err != nil {
		return kinds.GenericSpec{}, err
	}
	spec = kinds.GenericSpec{VectorDims: parsed.VectorDims, Blobs: parsed.Blobs}
	if st.ID == uuid.Nil { // not a registry row: nothing to key it by
		return spec, nil
	}
	genericSpecs.mu.Lock()
	defer genericSpecs.mu.Unlock()
	if genericSpecs.m == nil || len(genericSpecs.m) >= maxGenericSpecs || genericSpecs.bytes+len(st.Schema) > maxGenericSpecBytes {
		genericSpecs.m, genericSpecs.bytes = map[uuid.UUID]kinds.GenericSpec{}, 0
	}
	genericSpecs.m[st.ID] = spec
	genericSpecs.bytes += len(st.Schema)
	return spec, nil
}

func (h *handlers) addGenericRows(c echo.Context) error {
	if ct := c.Request().Header.Get(echo.HeaderContentType); !isJSON(ct) {
		return unsupportedMediaType(ct, echo.MIMEApplicationJSON)
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if err := checkJSONSyntax(body); err != nil { // 400 before the store is looked up
		return err
	}
	return h.withStoreEntry(c, catalog.KindGeneric, func(s *lsm.Store, st catalog.Store) error {
		var opts genericOptions
		_ = json.Unmarshal(st.Options, &opts)
		flush := opts.SealOnAdd || flushRequested(c)
		spec, err := genericSpec(st)
		if err != nil {
			return err
		}
		cd := genericCodec(s)
		cd.vectors = spec.VectorDims
		rec, err := cd.decodeRowsJSON(body, "rows", nil, h.mem)
		if err != nil {
			return err
		}
		defer rec.Release()
		if err := h.appendRecord(c.Request().Context(), catalog.KindGeneric, st.Name, s, rec, flush); err != nil {
			return err
		}
		v, err := tableVersion(c.Request().Context(), s)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, AppendResponse{Version: v, Count: int(rec.NumRows())})
	})
}

// genericFilter parses ?filter=: a SQL predicate (lance-context's form, e.g. step > 5 AND role =
// 'user') or a JSON object of column: value equalities.
func genericFilter(c echo.Context, s *lsm.Store) (rowFilter, error) {
	return parseRowFilter(c.QueryParam("filter"), s, genericEqualities)
}

// genericEqualities parses {"col": value, ...} (equality, ANDed); the scan checks the columns.
func genericEqualities(raw string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var in map[string]any
	if err := dec.Decode(&in); err != nil {
		return nil, invalid("filter: a JSON object of column: value equalities, or a SQL predicate: %v", err)
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				out[k] = i
				continue
			}
			f, _ := n.Float64()
			out[k] = f
			continue
		}
		out[k] = v
	}
	return out, nil
}

func (h *handlers) listGenericRows(c echo.Context) error {
	limit, offset, cursor, err := pageParams(c)
	if err != nil {
		return err
	}
	return h.withStoreEntry(c, catalog.KindGeneric, func(s *lsm.Store, st catalog.Store) error {
		filters, err := genericFilter(c, s)
		if err != nil {
			return err
		}
		spec, err := genericSpec(st)
		if err != nil {
			return err
		}
		at, err := h.readPointParam(c, catalog.KindGeneric)
		if err != nil {
			return err
		}
		rec, next, err := h.page(c.Request().Context(), s, columnsExcept(s, spec.Blobs), filters, limit, offset, cursor, at)
		if err != nil {
			return err
		}
		defer rec.Release()
		return genericCodec(s).writePage(c, "rows", rec, nil, next) // RowsPage, streamed
	})
}

func (h *handlers) getGenericRow(c echo.Context) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	return h.withStoreEntry(c, catalog.KindGeneric, func(s *lsm.Store, st catalog.Store) error {
		var asked []string
		if v := c.QueryParam("columns"); v != "" {
			asked = strings.Split(v, ",")
		}
		columns, err := rowColumns(s, st, catalog.KindGeneric, asked)
		if err != nil {
			return err
		}
		at, err := h.readPointParam(c, catalog.KindGeneric)
		if err != nil {
			return err
		}
		rec, err := getAt(c.Request().Context(), s, at, id, columns)
		if err != nil {
			return err
		}
		if rec == nil {
			return notFound("row %q not found", id)
		}
		defer rec.Release()
		return c.JSONBlob(http.StatusOK, genericCodec(s).encode(rec, nil)[0])
	})
}
