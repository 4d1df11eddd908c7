// Read tokens: POST /api/v1/snapshots {"stores": ["rollout/a", "generic/b", …], "ttl": "24h"}
// takes a cut of every store named (storage/lsm's cut.go: its table version and each shard's
// newest sealed generation), all at once, records them in the catalog, and answers a token; any
// read route given ?snapshot=<token> on any worker answers exactly that cut until the token
// expires or DELETE /api/v1/snapshots/{id} releases it (410 SNAPSHOT_EXPIRED after). The cuts'
// table versions and generations are kept from cleanup by the catalog's record (the stores'
// merges and cleanups read it), whatever Temporal does; a SnapshotLease workflow per token
// (Leaser) makes the lease visible and releases the token at its expiry.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
)

// Leaser runs the SnapshotLease workflow of read tokens.
type Leaser interface {
	// StartLease starts the token's lease workflow, which releases it at expiresAt.
	StartLease(ctx context.Context, id string, expiresAt time.Time) error
	// EndLease tells the token's lease workflow that it was released.
	EndLease(ctx context.Context, id string) error
}

// SnapshotRequest takes a read token.
type SnapshotRequest struct {
	Stores []string `json:"stores"`        // "kind/name", kind as rollout|generic|datagen|context or its route (rollouts, contexts)
	TTL    string   `json:"ttl,omitempty"` // how long it can be read (default 24h)
}

// SnapshotInfo describes a read token.
type SnapshotInfo struct {
	ID         string              `json:"id"`
	CreatedAt  time.Time           `json:"created_at"`
	ExpiresAt  time.Time           `json:"expires_at"`
	Stores     []SnapshotStoreInfo `json:"stores,omitempty"`
	StoreCount int                 `json:"store_count"`
}

// SnapshotStoreInfo is one store's cut in a token.
type SnapshotStoreInfo struct {
	Store        string            `json:"store"`
	TableVersion uint64            `json:"table_version"`
	Generations  map[string]uint64 `json:"generations,omitempty"`
}

// leaseStartTimeout bounds starting or signalling a token's lease workflow.
const leaseStartTimeout = 2 * time.Second

// snapshotConcurrency bounds the cuts one request takes at once.
const snapshotConcurrency = 32

func (h *handlers) registerSnapshots(g *routeGroup) {
	g.POST("/snapshots", h.createSnapshot)
	g.GET("/snapshots", h.listSnapshots)
	g.GET("/snapshots/:id", h.getSnapshot)
	g.DELETE("/snapshots/:id", h.deleteSnapshot)
}

// parseStoreRef reads "kind/name".
func parseStoreRef(ref string) (catalog.Kind, string, error) {
	k, name, ok := strings.Cut(ref, "/")
	if !ok {
		return "", "", invalid("stores: %q is not kind/name", ref)
	}
	kind, err := catalog.ParseKind(k)
	if err != nil {
		for _, sk := range kinds.Served() {
			if sk.Route == k {
				kind, err = sk.Name, nil
			}
		}
	}
	if err != nil {
		return "", "", invalid("stores: %q: %v", ref, err)
	}
	if err := catalog.ValidateName(name); err != nil {
		return "", "", invalid("stores: %q: %v", ref, err)
	}
	return kind, name, nil
}

func (h *handlers) createSnapshot(c echo.Context) error {
	var req SnapshotRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if len(req.Stores) == 0 || len(req.Stores) > catalog.MaxSnapshotStores {
		return invalid("stores: name 1 to %d stores", catalog.MaxSnapshotStores)
	}
	ttl := 24 * time.Hour
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > h.deps.MaxSnapshotTTL {
			return invalid("ttl must be a duration from 1s to %s, not %q", h.deps.MaxSnapshotTTL, req.TTL)
		}
		ttl = d
	}
	type ref struct {
		kind catalog.Kind
		name string
	}
	refs := make([]ref, len(req.Stores))
	seen := map[ref]bool{}
	for i, s := range req.Stores {
		k, n, err := parseStoreRef(s)
		if err != nil {
			return err
		}
		refs[i] = ref{k, n}
		if seen[refs[i]] {
			return invalid("stores: %q is named twice", s)
		}
		seen[refs[i]] = true
	}
	// Every cut at once: the token's moment is when they were taken (each store's sealed state
	// then; rows still in a memtable on some worker are not in it).
	ctx := c.Request().Context()
	stores := make([]catalog.SnapshotStore, len(refs))
	infos := make([]SnapshotStoreInfo, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(snapshotConcurrency)
	for i, r := range refs {
		g.Go(func() error {
			s, release, err := h.deps.Stores.Acquire(gctx, r.kind, r.name)
			if err != nil {
				return err
			}
			defer release()
			cut, err := s.CurrentCut(gctx)
			if err != nil {
				return err
			}
			raw, err := json.Marshal(cut)
			if err != nil {
				return err
			}
			stores[i] = catalog.SnapshotStore{Kind: r.kind, Name: r.name, Cut: raw}
			infos[i] = SnapshotStoreInfo{Store: string(r.kind) + "/" + r.name, TableVersion: cut.TableVersion, Generations: cut.Generations}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	id := newSnapshotID()
	snap, err := h.deps.Stores.Catalog().CreateSnapshot(ctx, catalog.ReadSnapshot{ID: id, ExpiresAt: time.Now().Add(ttl), Stores: stores})
	if err != nil {
		return err
	}
	if h.deps.Leases != nil {
		// Bounded: Temporal being down must not hold the answer (the token holds without it).
		lctx, cancel := context.WithTimeout(ctx, leaseStartTimeout)
		err := h.deps.Leases.StartLease(lctx, id, snap.ExpiresAt)
		cancel()
		if err != nil {
			// The token holds through the catalog without its workflow; only its visibility in
			// the Temporal UI and its release at expiry are missing (expiry ends it anyway).
			h.deps.Log.Warn("read token taken without its lease workflow", "snapshot", id, "err", err)
		}
	}
	return c.JSON(http.StatusCreated, SnapshotInfo{ID: id, CreatedAt: snap.CreatedAt, ExpiresAt: snap.ExpiresAt, Stores: infos, StoreCount: len(infos)})
}

// newSnapshotID is a token's id: 128 random bits (a token is a capability to read old versions).
func newSnapshotID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "snap-" + hex.EncodeToString(b)
}

func (h *handlers) listSnapshots(c echo.Context) error {
	list, err := h.deps.Stores.Catalog().ListSnapshots(c.Request().Context(), 0)
	if err != nil {
		return err
	}
	out := make([]SnapshotInfo, 0, len(list))
	for _, s := range list {
		out = append(out, SnapshotInfo{ID: s.ID, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt, StoreCount: len(s.Stores)})
	}
	return c.JSON(http.StatusOK, map[string]any{"snapshots": out})
}

func (h *handlers) getSnapshot(c echo.Context) error {
	s, err := h.deps.Stores.Catalog().GetSnapshot(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if !s.Live(time.Now()) {
		return &APIError{Status: http.StatusGone, Code: CodeSnapshotExpired, Message: "read token " + s.ID + " expired or was released"}
	}
	info := SnapshotInfo{ID: s.ID, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt, StoreCount: len(s.Stores)}
	for _, st := range s.Stores {
		var cut lsm.Cut
		if err := json.Unmarshal(st.Cut, &cut); err != nil {
			return err
		}
		info.Stores = append(info.Stores, SnapshotStoreInfo{Store: string(st.Kind) + "/" + st.Name, TableVersion: cut.TableVersion, Generations: cut.Generations})
	}
	return c.JSON(http.StatusOK, info)
}

func (h *handlers) deleteSnapshot(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := h.deps.Stores.Catalog().ReleaseSnapshot(ctx, id); err != nil {
		return err
	}
	if h.deps.Leases != nil {
		lctx, cancel := context.WithTimeout(ctx, leaseStartTimeout)
		err := h.deps.Leases.EndLease(lctx, id)
		cancel()
		if err != nil {
			h.deps.Log.Warn("read token released; its lease workflow was not told (it ends at expiry)", "snapshot", id, "err", err)
		}
	}
	return c.NoContent(http.StatusNoContent)
}

// snapshotCut is the cut a read given ?snapshot= reads (nil without one).
func (h *handlers) snapshotCut(c echo.Context, kind catalog.Kind) (*lsm.Cut, error) {
	id := c.QueryParam("snapshot")
	if id == "" {
		return nil, nil
	}
	if len(id) > 128 {
		return nil, invalid("snapshot: not a read token")
	}
	raw, err := h.deps.Stores.Catalog().SnapshotCut(c.Request().Context(), id, kind, c.Param("name"))
	if err != nil {
		return nil, err
	}
	var cut lsm.Cut
	if err := json.Unmarshal(raw, &cut); err != nil {
		return nil, err
	}
	return &cut, nil
}

// readPointParam reads where a read reads: ?version= (a checkout of a base-table version, no
// WAL) or ?snapshot= (a read token's cut), not both; neither is the live view.
func (h *handlers) readPointParam(c echo.Context, kind catalog.Kind) (pageSource, error) {
	version, err := versionParam(c)
	if err != nil {
		return pageSource{}, err
	}
	cut, err := h.snapshotCut(c, kind)
	if err != nil {
		return pageSource{}, err
	}
	if cut != nil && version != 0 {
		return pageSource{}, invalid("version and snapshot are exclusive")
	}
	source, err := sourceParam(c)
	if err != nil {
		return pageSource{}, err
	}
	return pageSource{version: version, cut: cut, source: source}, nil
}

// getAt reads one row at a read point.
func getAt(ctx context.Context, s *lsm.Store, at pageSource, id string, columns []string) (arrow.RecordBatch, error) {
	if at.cut != nil {
		return s.GetCut(ctx, at.cut, id, columns)
	}
	return s.GetAt(ctx, at.version, id, columns)
}
