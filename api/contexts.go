// Context store routes (/api/v1/contexts, lance-context's paths and DTOs): creating a store with
// its embedding dimension and metric, and what every context route shares — the store's rules,
// the per-store mutation lock, and reading records back from the LSM. Records: contextrecords.go;
// search and retrieve: contextsearch.go.
package api

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
)

// CreateContextRequest is the body of POST /api/v1/contexts (lance-context's
// CreateContextRequest).
type CreateContextRequest struct {
	Name           string            `json:"name"`
	StorageOptions map[string]string `json:"storage_options,omitempty"`
	IDIndexType    string            `json:"id_index_type,omitempty"`
	BlobColumns    []string          `json:"blob_columns,omitempty"`
	EmbeddingDim   int               `json:"embedding_dim,omitempty"`
	DistanceMetric string            `json:"distance_metric,omitempty"`
	ExistOK        bool              `json:"exist_ok,omitempty"` // see CreateStoreRequest
}

// ContextList is the body of GET /api/v1/contexts (lance-context's ListContextsResponse).
type ContextList struct {
	Contexts   []StoreInfo `json:"contexts"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// registerContexts registers the context kind's own routes (its registry routes:
// registerStores).
func (h *handlers) registerContexts(g *routeGroup) {
	g.POST("/contexts/:name/records", h.addContextRecords, h.preferredWorkers(catalog.KindContext))
	g.GET("/contexts/:name/records", h.listContextRecords)
	g.PUT("/contexts/:name/records", h.upsertContextRecord)
	g.PUT("/contexts/:name/records/batch", h.upsertContextRecords)
	g.PATCH("/contexts/:name/records", h.updateContextRecord)
	g.DELETE("/contexts/:name/records", h.deleteContextRecordByExternalID)
	g.GET("/contexts/:name/records/by-external-id", h.getContextRecordByExternalID)
	g.GET("/contexts/:name/records/related", h.relatedContextRecords)
	g.GET("/contexts/:name/records/:id", h.getContextRecord)
	g.DELETE("/contexts/:name/records/:id", h.deleteContextRecord)
	g.GET("/contexts/:name/records/:id/payload", h.getContextPayload)
	g.POST("/contexts/:name/search", h.searchContext)
	g.POST("/contexts/:name/retrieve", h.retrieveContext)
	g.GET("/contexts/:name/version", h.contextVersion)
	g.POST("/contexts/:name/checkout", h.checkout(catalog.KindContext))
	g.POST("/contexts/:name/compact", h.compact(catalog.KindContext))
	g.GET("/contexts/:name/compact/stats", h.compactStatsOf(catalog.KindContext))
}

func (h *handlers) createContext(c echo.Context) error {
	var req CreateContextRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	cfg := kinds.ContextConfig{EmbeddingDim: req.EmbeddingDim, DistanceMetric: req.DistanceMetric, IDIndexType: req.IDIndexType,
		BlobColumns: req.BlobColumns, StorageOptions: req.StorageOptions}
	if err := cfg.Validate(); err != nil {
		return invalid("%v", err)
	}
	if len(req.StorageOptions) > 0 {
		if err := h.mayChooseStorage(c); err != nil {
			return err
		}
	}
	options, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	st, created, err := h.deps.Stores.Create(c.Request().Context(), catalog.KindContext, req.Name, nil, options)
	if err != nil {
		return err
	}
	return h.respondStore(c, catalog.KindContext, st, created, req.ExistOK)
}

// contextStore is what a context route works with: the store, its registry row and its rules.
type contextStore struct {
	s      *lsm.Store
	entry  catalog.Store
	config kinds.ContextConfig
}

func (cs contextStore) rules() contexts.Rules {
	return contexts.Rules{EmbeddingDim: cs.config.EmbeddingDim}
}

// withContext resolves the route's context store and runs fn with it.
func (h *handlers) withContext(c echo.Context, fn func(cs contextStore) error) error {
	return h.withStoreEntry(c, catalog.KindContext, func(s *lsm.Store, st catalog.Store) error {
		cfg, err := kinds.ParseContextConfig(st.Options)
		if err != nil {
			return err
		}
		return fn(contextStore{s: s, entry: st, config: cfg})
	})
}

// contextMutations serializes, per store and within this process, the routes that read a record
// before they write its successor (upsert, update, delete, and adds that claim external ids), so
// two of them cannot both take the same external id or supersede the same record. Striped by
// store name: a bounded set of locks, whatever the number of stores. Across workers, such writes
// to one store are last-writer-wins on the external id's claim row (README: context stores).
var contextMutations struct {
	seed  maphash.Seed
	locks [256]sync.Mutex
}

func init() { contextMutations.seed = maphash.MakeSeed() }

// lockContext takes the mutation lock of store name; the caller calls the function it returns.
func lockContext(name string) func() {
	mu := &contextMutations.locks[maphash.String(contextMutations.seed, name)%uint64(len(contextMutations.locks))]
	mu.Lock()
	return mu.Unlock
}

// contextPageRows is how many records a read of a whole store takes from the LSM at a time.
const contextPageRows = 2048

// scanContext reads every record of the store (never a claim row) in id order, a page at a time,
// with the given columns (all when empty), and calls fn with each page's records; fields are
// equalities the scan applies itself. It stops at fn's first error or when ctx ends.
func scanContext(ctx context.Context, s *lsm.Store, columns []string, fields map[string]string, at pageSource, fn func([]contexts.Record) error) error {
	var filters map[string]any
	if len(fields) > 0 {
		filters = make(map[string]any, len(fields))
		for k, v := range fields {
			filters[k] = v
		}
	}
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := s.Scan(ctx, lsm.ScanOptions{Columns: columns, Filters: filters, After: after, Before: contexts.ExternalIDKeyPrefix,
			Limit: contextPageRows, Version: at.version, Cut: at.cut})
		if err != nil {
			return err
		}
		recs, err := contexts.FromArrow(page.Rows)
		page.Rows.Release()
		if err != nil {
			return err
		}
		if err := fn(recs); err != nil {
			return err
		}
		if page.Next == "" {
			return nil
		}
		after = page.Next
	}
}

// contextColumnsWithout is every column of the context schema but the named ones.
func contextColumnsWithout(names ...string) []string {
	var out []string
	for _, f := range contexts.Schema.Fields() {
		if !slices.Contains(names, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

// getContextRow reads one record or claim row by key at a read point (nil when absent).
func getContextRow(ctx context.Context, s *lsm.Store, key string, at pageSource) (*contexts.Record, error) {
	rec, err := getAt(ctx, s, at, key, nil)
	if err != nil || rec == nil {
		return nil, err
	}
	defer rec.Release()
	recs, err := contexts.FromArrow(rec)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return &recs[0], nil
}

// byExternalID is the record that holds external id xid now (nil when none does).
func byExternalID(ctx context.Context, s *lsm.Store, xid string) (*contexts.Record, error) {
	claim, err := getContextRow(ctx, s, contexts.ClaimKey(xid), pageSource{})
	if err != nil || claim == nil {
		return nil, err
	}
	id := contexts.ClaimedID(*claim)
	if !contexts.IsRecordID(id) {
		return nil, nil
	}
	rec, err := getContextRow(ctx, s, id, pageSource{})
	if err != nil || rec == nil || rec.ExternalID == nil || *rec.ExternalID != xid {
		return nil, err
	}
	return rec, nil
}

// newRecordID is a record id: a UUIDv7, so that id order is creation order (lance-context uses
// random v4 ids), lowercase hex, which sorts before every claim row.
func newRecordID() string { return uuid.Must(uuid.NewV7()).String() }

// writeContextRows appends records (and claim rows) in one batch — one durable write, all or
// nothing — sealing first when the request asks, and answers the table version.
func (h *handlers) writeContextRows(c echo.Context, cs contextStore, rows []contexts.Record) (uint64, error) {
	ctx := c.Request().Context()
	if len(rows) > 0 {
		rec, err := contexts.ToArrow(h.mem, rows)
		if err != nil {
			return 0, err
		}
		defer rec.Release()
		if err := h.appendRecord(ctx, catalog.KindContext, cs.entry.Name, cs.s, rec, flushRequested(c)); err != nil {
			return 0, err
		}
	}
	return tableVersion(ctx, cs.s)
}

// contextNow is the time records are stamped with (a variable for tests).
var contextNow = time.Now

// contextVersion answers GET .../version.
func (h *handlers) contextVersion(c echo.Context) error {
	return h.withContext(c, func(cs contextStore) error {
		v, err := tableVersion(c.Request().Context(), cs.s)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, VersionResponse{Version: v})
	})
}

// VersionResponse is the body of GET .../version.
type VersionResponse struct {
	Version uint64 `json:"version"`
}
