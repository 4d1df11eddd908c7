// Named change-feed consumers: POST /api/v1/{kind}/{name}/consumers {"name", "start"} registers
// one at the feed's end (start "now", the default) or its oldest held rows ("earliest");
// GET …/changes?consumer=<c> reads from its committed cursor; POST …/consumers/{c}/commit
// {"cursor"} records how far it has processed. Cursors live in the catalog; until a consumer
// commits past them, the store's merges keep its rows (within the server's retention bound,
// --feed-retention), and a consumer that falls past that bound reads 410 CURSOR_EXPIRED with a
// restart point. GET …/consumers lists them with their lag; DELETE …/consumers/{c} drops one.
package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/lsm"
)

// ConsumerRequest registers a consumer.
type ConsumerRequest struct {
	Name  string `json:"name"`
	Start string `json:"start,omitempty"` // "now" (default) or "earliest"
}

// CommitRequest records a consumer's position.
type CommitRequest struct {
	Cursor string `json:"cursor"`
}

// ConsumerInfo describes a consumer.
type ConsumerInfo struct {
	Name        string    `json:"name"`
	Cursor      string    `json:"cursor"`
	CreatedAt   time.Time `json:"created_at"`
	CommittedAt time.Time `json:"committed_at"`
	// LagGenerations: sealed generations after its cursor; LagSeconds: how long ago the oldest
	// of them was sealed (0 when caught up). Listings only.
	LagGenerations *int     `json:"lag_generations,omitempty"`
	LagSeconds     *float64 `json:"lag_seconds,omitempty"`
}

func consumerInfo(cs catalog.Consumer) ConsumerInfo {
	return ConsumerInfo{Name: cs.Consumer, Cursor: cs.Cursor, CreatedAt: cs.CreatedAt, CommittedAt: cs.CommittedAt}
}

func (h *handlers) registerConsumers(g *routeGroup, base string, kind catalog.Kind) {
	g.GET(base+"/:name/changes", h.changes(kind))
	g.POST(base+"/:name/consumers", h.createConsumer(kind))
	g.GET(base+"/:name/consumers", h.listConsumers(kind))
	g.GET(base+"/:name/consumers/:consumer", h.getConsumer(kind))
	g.POST(base+"/:name/consumers/:consumer/commit", h.commitConsumer(kind))
	g.DELETE(base+"/:name/consumers/:consumer", h.deleteConsumer(kind))
}

func (h *handlers) createConsumer(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req ConsumerRequest
		if err := decodeBody(c, &req); err != nil {
			return err
		}
		if err := catalog.ValidateName(req.Name); err != nil {
			return invalid("name: %v", err)
		}
		if req.Start != "" && req.Start != "now" && req.Start != "earliest" {
			return invalid("start must be now or earliest, not %q", req.Start)
		}
		return h.withStore(c, kind, func(s *lsm.Store) error {
			ctx := c.Request().Context()
			start := s.FeedHead
			if req.Start == "earliest" {
				start = s.FeedEarliest
			}
			cur, err := start(ctx)
			if err != nil {
				return err
			}
			cs, err := h.deps.Stores.Catalog().CreateConsumer(ctx, kind, c.Param("name"), req.Name, cur.String())
			if err != nil {
				return err
			}
			return c.JSON(http.StatusCreated, consumerInfo(cs))
		})
	}
}

func (h *handlers) listConsumers(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		return h.withStore(c, kind, func(s *lsm.Store) error {
			ctx := c.Request().Context()
			list, err := h.deps.Stores.Catalog().ListConsumers(ctx, kind, c.Param("name"))
			if err != nil {
				return err
			}
			out := make([]ConsumerInfo, 0, len(list))
			for _, cs := range list {
				info := consumerInfo(cs)
				if err := h.addLag(c, s, &info); err != nil {
					return err
				}
				out = append(out, info)
			}
			return c.JSON(http.StatusOK, map[string]any{"consumers": out})
		})
	}
}

// addLag fills a consumer's lag.
func (h *handlers) addLag(c echo.Context, s *lsm.Store, info *ConsumerInfo) error {
	cur, err := lsm.ParseFeedCursor(info.Cursor)
	if err != nil {
		return err
	}
	gens, oldest, err := s.FeedLag(c.Request().Context(), cur)
	if err != nil {
		return err
	}
	secs := 0.0
	if !oldest.IsZero() {
		secs = time.Since(oldest).Seconds()
	}
	info.LagGenerations, info.LagSeconds = &gens, &secs
	return nil
}

func (h *handlers) getConsumer(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		return h.withStore(c, kind, func(s *lsm.Store) error {
			cs, err := h.deps.Stores.Catalog().GetConsumer(c.Request().Context(), kind, c.Param("name"), c.Param("consumer"))
			if err != nil {
				return err
			}
			info := consumerInfo(cs)
			if err := h.addLag(c, s, &info); err != nil {
				return err
			}
			return c.JSON(http.StatusOK, info)
		})
	}
}

func (h *handlers) commitConsumer(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req CommitRequest
		if err := decodeBody(c, &req); err != nil {
			return err
		}
		cur, err := parseCursor(req.Cursor)
		if err != nil {
			return err
		}
		if req.Cursor == "" {
			return invalid("cursor: the cursor a batch of the feed returned")
		}
		return h.withStore(c, kind, func(s *lsm.Store) error {
			ctx := c.Request().Context()
			cs, err := h.deps.Stores.Catalog().CommitConsumer(ctx, kind, c.Param("name"), c.Param("consumer"), req.Cursor)
			if err != nil {
				return err
			}
			if _, oldest, err := s.FeedLag(ctx, cur); err == nil {
				lag := 0.0
				if !oldest.IsZero() {
					lag = time.Since(oldest).Seconds()
				}
				h.feed.lag.WithLabelValues(string(kind)).Observe(lag)
			}
			return c.JSON(http.StatusOK, consumerInfo(cs))
		})
	}
}

func (h *handlers) deleteConsumer(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := catalog.ValidateName(c.Param("name")); err != nil {
			return err
		}
		if err := h.deps.Stores.Catalog().DeleteConsumer(c.Request().Context(), kind, c.Param("name"), c.Param("consumer")); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	}
}
