// Context search (vector k-NN) and retrieve (text and vector channels fused by reciprocal rank
// fusion), lance-context's routes. Both read the store's live view — base table, pending
// generations and this worker's memtable, newest version per id — so a record is searchable as
// soon as it is visible. The vector channel is the store's nearest-row read (lsm.Nearest: pending
// rows compared exactly, base fragments through their vector indexes), the text channel its text
// search (lsm.SearchText: BM25 over statistics summed across the WAL and the fragments, pending
// rows analyzed exactly, base fragments through their full-text indexes). Lifecycle and filters
// are applied to what a channel answers, and it is asked again for more (four times as many each
// time) until the limit is filled with visible records or the store has no more, so a hidden or
// stale version never takes a result's place.
package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/textindex"
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

// rankingColumns are the columns a ranking read needs: what visibility and the filters look at,
// and the text when the text channel scores it.
func rankingColumns(f contexts.Filters, text bool) []string {
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

// readVisible reads the records of ids (the given columns), in order, in one read of the store;
// a record a write deleted or hid since the ranking read is a zero record (ID "").
func readVisible(ctx context.Context, cs contextStore, ids, columns []string, life contexts.Lifecycle) ([]contexts.Record, error) {
	out := make([]contexts.Record, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rec, found, err := cs.s.GetSearched(ctx, ids, columns)
	if err != nil {
		return nil, err
	}
	recs, err := contexts.FromArrow(rec)
	rec.Release()
	if err != nil {
		return nil, err
	}
	for i, at := range found {
		if at >= 0 && life.Visible(&recs[at]) {
			out[i] = recs[at]
		}
	}
	return out, nil
}

// rankedRead is one channel's ranked read: up to k records, best first, with the given columns
// and each one's value (distance or score); exhausted when the store has no further candidate.
type rankedRead func(k int, columns []string) (recs []contexts.Record, values []float32, exhausted bool, err error)

// visibleRanked reads a channel's best visible records matching filters, up to want, with their
// values: records with the answer columns (relationships cleared unless asked), or, when answer
// is nil, with only what visibility and the filters look at (a caller that reads its winners
// whole itself).
//
// The first read asks for a quarter more than is wanted (at least 4 more), with the answer's
// columns. When hidden or filtered records leave the limit unfilled, the next reads ask for four
// times as many each time but answer only what visibility and the filters look at, so memory
// stays small per candidate, and the records that make the cut are then read whole by point
// reads. The reads stop at
// maxRankedCandidates candidates: a filter that keeps fewer than the limit among that many best
// records answers what it kept (the request's deadline bounds the rest).
func visibleRanked(ctx context.Context, cs contextStore, read rankedRead, answer []string, want int, filters contexts.Filters, life contexts.Lifecycle, relationships bool) ([]contexts.Record, []float32, error) {
	columns, narrow := answer, false
	if answer == nil {
		columns = rankingColumns(filters, false)
	}
	for k := want + max(want/4, 4); ; k = min(4*k, maxRankedCandidates) {
		recs, values, exhausted, err := read(k, columns)
		if err != nil {
			return nil, nil, err
		}
		var out []contexts.Record
		var kept []float32
		for i := range recs {
			if len(out) == want {
				break
			}
			if life.Visible(&recs[i]) && filters.Match(&recs[i]) {
				out, kept = append(out, recs[i]), append(kept, values[i])
			}
		}
		done := len(out) == want || exhausted || len(recs) < k || k == maxRankedCandidates
		if done && narrow && answer != nil {
			// The later rounds read only what visibility looks at: read the winners whole.
			ids := make([]string, len(out))
			for i := range out {
				ids[i] = out[i].ID
			}
			whole, err := readVisible(ctx, cs, ids, answer, life)
			if err != nil {
				return nil, nil, err
			}
			wholeOut, wholeKept := make([]contexts.Record, 0, len(out)), make([]float32, 0, len(out))
			for i, r := range whole {
				if r.ID != "" {
					if r.Embedding == nil {
						r.Embedding = out[i].Embedding
					}
					wholeOut, wholeKept = append(wholeOut, r), append(wholeKept, kept[i])
				}
			}
			out, kept = wholeOut, wholeKept
		}
		if done {
			if !relationships {
				for i := range out {
					out[i].Relationships = nil
				}
			}
			return out, kept, nil
		}
		columns, narrow = rankingColumns(filters, false), true
	}
}

// nearestVisible is the vector channel: up to want visible records matching filters, nearest to
// query first, with their distances. Each record's embedding comes from the nearest-row read
// (which holds it), not from reading the column again.
func nearestVisible(ctx context.Context, cs contextStore, query []float32, answer []string, want int, filters contexts.Filters, life contexts.Lifecycle, relationships bool) ([]contexts.Record, []float32, error) {
	metric := contexts.VectorMetric(cs.config.Metric())
	read := func(k int, columns []string) ([]contexts.Record, []float32, bool, error) {
		res, err := cs.s.Nearest(ctx, lsm.NearestQuery{Column: contexts.EmbeddingColumn, Metric: metric, Query: query, K: k,
			Columns: columns, Before: contexts.ExternalIDKeyPrefix})
		if err != nil {
			return nil, nil, false, err
		}
		recs, err := contexts.FromArrow(res.Rows)
		res.Rows.Release()
		if err != nil {
			return nil, nil, false, err
		}
		for i := range recs {
			recs[i].Embedding = res.Vectors[i]
		}
		return recs, res.Distances, res.Exhausted, nil
	}
	return visibleRanked(ctx, cs, read, answer, want, filters, life, relationships)
}

// textVisible is the text channel: up to want visible records matching filters, best BM25 score
// first, with their scores (statistics over every record of the store, whatever its lifecycle),
// with only what visibility and the filters look at.
func textVisible(ctx context.Context, cs contextStore, query textindex.Query, want int, filters contexts.Filters, life contexts.Lifecycle) ([]contexts.Record, []float32, error) {
	read := func(k int, columns []string) ([]contexts.Record, []float32, bool, error) {
		res, err := cs.s.SearchText(ctx, lsm.TextQuery{Column: contexts.TextColumn, Query: query, K: k,
			Columns: columns, Before: contexts.ExternalIDKeyPrefix})
		if err != nil {
			return nil, nil, false, err
		}
		recs, err := contexts.FromArrow(res.Rows)
		res.Rows.Release()
		if err != nil {
			return nil, nil, false, err
		}
		return recs, res.Scores, res.Exhausted, nil
	}
	return visibleRanked(ctx, cs, read, nil, want, filters, life, false)
}

// maxRankedCandidates bounds how many candidates one channel's read considers.
const maxRankedCandidates = 1 << 16

// nearestColumns are what a search answers of each record but the embedding (the nearest-row
// read holds it) and the binary payload.
var nearestColumns = contextColumnsWithout("binary_payload", "embedding")

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
		recs, dists, err := nearestVisible(c.Request().Context(), cs, req.Query, nearestColumns, limit, filters, life, req.IncludeRelationships)
		if err != nil {
			return err
		}
		out := contexts.SearchResponse{Results: make([]contexts.SearchResult, 0, len(recs))}
		for i := range recs {
			out.Results = append(out.Results, contexts.SearchResult{Record: recs[i], Distance: dists[i]})
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
	var query *textindex.Query
	if req.Text != nil && *req.Text != "" {
		q, err := textindex.ParseQuery(*req.Text)
		if err != nil {
			return invalid("text: %v", err)
		}
		query = &q
	}
	if query == nil && req.Vector == nil {
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
		// Both channels rank by what visibility and the filters look at; the fused winners are
		// then read whole, but for the embeddings the vector channel already holds (a point
		// read of an embedding decodes its column from its row group's start).
		var vector, text []contexts.Scored
		embeddings := map[string][]float32{}
		if req.Vector != nil {
			recs, dists, err := nearestVisible(ctx, cs, req.Vector, nil, depth, filters, life, false)
			if err != nil {
				return err
			}
			for i, r := range recs {
				vector = append(vector, contexts.Scored{ID: r.ID, Value: dists[i]})
				embeddings[r.ID] = r.Embedding
			}
		}
		if query != nil {
			recs, scores, err := textVisible(ctx, cs, *query, depth, filters, life)
			if err != nil {
				return err
			}
			for i, r := range recs {
				text = append(text, contexts.Scored{ID: r.ID, Value: scores[i]})
			}
		}
		fused := contexts.Fuse(vector, text, limit)
		ids := make([]string, len(fused))
		for i, f := range fused {
			ids[i] = f.ID
		}
		whole, err := readVisible(ctx, cs, ids, nearestColumns, life)
		if err != nil {
			return err
		}
		var unknown []string // winners only the text channel found: their embeddings are read
		for _, r := range whole {
			if _, ok := embeddings[r.ID]; r.ID != "" && !ok {
				unknown = append(unknown, r.ID)
			}
		}
		if len(unknown) > 0 {
			rec, found, err := cs.s.GetSearched(ctx, unknown, []string{contexts.EmbeddingColumn})
			if err != nil {
				return err
			}
			embs, err := contexts.FromArrow(rec)
			rec.Release()
			if err != nil {
				return err
			}
			for i, at := range found {
				if at >= 0 {
					embeddings[unknown[i]] = embs[at].Embedding
				}
			}
		}
		records := map[string]contexts.Record{}
		for _, r := range whole {
			if r.ID != "" {
				if !req.IncludeRelationships {
					r.Relationships = nil
				}
				r.Embedding = embeddings[r.ID]
				records[r.ID] = r
			}
		}
		out := contexts.RetrieveResponse{Results: make([]contexts.RetrieveResult, 0, len(fused))}
		for _, f := range fused {
			if r, ok := records[f.ID]; ok {
				out.Results = append(out.Results, contexts.RetrieveResult{Record: r, Score: f.Score,
					VectorDistance: f.VectorDistance, TextScore: f.TextScore, MatchedChannels: f.Channels})
			}
		}
		return c.JSON(http.StatusOK, out)
	})
}
