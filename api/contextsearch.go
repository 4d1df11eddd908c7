// Context search (vector k-NN) and retrieve (text and vector channels fused by reciprocal rank
// fusion), lance-context's routes. Both read the store's live view — base table, pending
// generations and this worker's memtable, newest version per id — so a record is searchable as
// soon as it is visible; lifecycle and filters are applied before ranking, so a hidden or stale
// version never takes a result's place. The ranking is exact: every visible record is compared
// (contexts.Nearest keeps the best in memory bounded by the limit), then the winners are read
// whole by point reads.
package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/contexts"
)

const defaultSearchLimit = 10

// searchLimit reads a search's limit (default 10, 1..contexts.MaxLimit).
func searchLimit(v *int) (int, error) {
	if v == nil {
		return defaultSearchLimit, nil
	}
	if *v < 1 || *v > contexts.MaxLimit {
		return 0, invalid("limit must be between 1 and %d", contexts.MaxLimit)
	}
	return *v, nil
}

// rankingColumns are the columns a ranking scan reads: what visibility and the filters look at,
// and the channels' inputs.
func rankingColumns(f contexts.Filters, vector, text bool) []string {
	cols := []string{"id", "expires_at", "lifecycle_status", "retired_at", "superseded_by_id"}
	for k := range f.Fields {
		cols = append(cols, k)
	}
	if f.CreatedStart != nil || f.CreatedEnd != nil {
		cols = append(cols, "created_at")
	}
	if len(f.Metadata) > 0 {
		cols = append(cols, "metadata")
	}
	if vector {
		cols = append(cols, "embedding")
	}
	if text {
		cols = append(cols, "text_payload")
	}
	return dedupe(cols)
}

func dedupe(cols []string) []string {
	seen := map[string]bool{}
	out := cols[:0]
	for _, c := range cols {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// rankedRecords reads the records of ids whole (without binary payloads), in order, dropping any
// that a write made invisible since the ranking scan.
func rankedRecords(ctx context.Context, cs contextStore, ids []string, life contexts.Lifecycle, relationships bool) ([]contexts.Record, error) {
	out := make([]contexts.Record, 0, len(ids))
	for _, id := range ids {
		rec, err := cs.s.Get(ctx, id, listColumns)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			out = append(out, contexts.Record{})
			continue
		}
		recs, err := contexts.FromArrow(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		r := recs[0]
		if !life.Visible(&r) {
			r = contexts.Record{}
		}
		if !relationships {
			r.Relationships = nil
		}
		out = append(out, r)
	}
	return out, nil
}

func (h *handlers) searchContext(c echo.Context) error {
	var req contexts.SearchRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	limit, err := searchLimit(req.Limit)
	if err != nil {
		return err
	}
	filters, err := contexts.ParseFilters(req.Filters)
	if err != nil {
		return invalid("filters: %v", err)
	}
	life := contexts.Lifecycle{IncludeExpired: req.IncludeExpired, IncludeRetired: req.IncludeRetired, Now: contextNow()}
	return h.withContext(c, func(cs contextStore) error {
		if err := cs.rules().CheckQuery("query", req.Query); err != nil {
			return invalid("%v", err)
		}
		ctx := c.Request().Context()
		metric := cs.config.Metric()
		nearest := contexts.NewNearest(limit)
		err := scanContext(ctx, cs.s, rankingColumns(filters, true, false), filters.Fields, 0, func(page []contexts.Record) error {
			for i := range page {
				r := &page[i]
				if len(r.Embedding) != len(req.Query) || !life.Visible(r) || !filters.Match(r) {
					continue
				}
				nearest.Offer(r.ID, contexts.Distance(metric, req.Query, r.Embedding))
			}
			return nil
		})
		if err != nil {
			return err
		}
		top := nearest.Sorted()
		ids := make([]string, len(top))
		for i, s := range top {
			ids[i] = s.ID
		}
		recs, err := rankedRecords(ctx, cs, ids, life, req.IncludeRelationships)
		if err != nil {
			return err
		}
		out := contexts.SearchResponse{Results: make([]contexts.SearchResult, 0, len(top))}
		for i, s := range top {
			if recs[i].ID != "" {
				out.Results = append(out.Results, contexts.SearchResult{Record: recs[i], Distance: s.Value})
			}
		}
		return c.JSON(http.StatusOK, out)
	})
}

func (h *handlers) retrieveContext(c echo.Context) error {
	var req contexts.RetrieveRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.Fusion != "" && req.Fusion != "rrf" {
		return invalid("retrieve fusion currently supports only 'rrf'")
	}
	limit, err := searchLimit(req.Limit)
	if err != nil {
		return err
	}
	filters, err := contexts.ParseFilters(req.Filters)
	if err != nil {
		return invalid("filters: %v", err)
	}
	var scorer *contexts.TextScorer
	if req.Text != nil && *req.Text != "" {
		if scorer, err = contexts.NewTextScorer(*req.Text); err != nil {
			return invalid("text: %v", err)
		}
	}
	if scorer == nil && req.Vector == nil {
		return invalid("retrieve requires text, vector or both")
	}
	life := contexts.Lifecycle{IncludeExpired: req.IncludeExpired, IncludeRetired: req.IncludeRetired, Now: contextNow()}
	return h.withContext(c, func(cs contextStore) error {
		if req.Vector != nil {
			if err := cs.rules().CheckQuery("vector", req.Vector); err != nil {
				return invalid("%v", err)
			}
		}
		ctx := c.Request().Context()
		depth := contexts.CandidateDepth(limit)
		metric := cs.config.Metric()
		var nearest *contexts.Nearest
		if req.Vector != nil {
			nearest = contexts.NewNearest(depth)
		}
		// With a text channel every shown record counts toward the term statistics, so the scan
		// cannot narrow by the filters' fields; without one it can.
		pushdown := filters.Fields
		if scorer != nil {
			pushdown = nil
		}
		err := scanContext(ctx, cs.s, rankingColumns(filters, nearest != nil, scorer != nil), pushdown, 0, func(page []contexts.Record) error {
			for i := range page {
				r := &page[i]
				if !life.Visible(r) {
					continue
				}
				match := filters.Match(r)
				if scorer != nil {
					scorer.Add(r.ID, r.TextPayload, match)
				}
				if nearest != nil && match && len(r.Embedding) == len(req.Vector) {
					nearest.Offer(r.ID, contexts.Distance(metric, req.Vector, r.Embedding))
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		var vector, text []contexts.Scored
		if nearest != nil {
			vector = nearest.Sorted()
		}
		if scorer != nil {
			text = scorer.Top(depth)
		}
		fused := contexts.Fuse(vector, text, limit)
		ids := make([]string, len(fused))
		for i, f := range fused {
			ids[i] = f.ID
		}
		recs, err := rankedRecords(ctx, cs, ids, life, req.IncludeRelationships)
		if err != nil {
			return err
		}
		out := contexts.RetrieveResponse{Results: make([]contexts.RetrieveResult, 0, len(fused))}
		for i, f := range fused {
			if recs[i].ID != "" {
				out.Results = append(out.Results, contexts.RetrieveResult{Record: recs[i], Score: f.Score,
					VectorDistance: f.VectorDistance, TextScore: f.TextScore, MatchedChannels: f.Channels})
			}
		}
		return c.JSON(http.StatusOK, out)
	})
}
