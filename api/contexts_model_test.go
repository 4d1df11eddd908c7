package api_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/storage/textindex"
)

// contextModel is what a context store should hold: every record row by id (superseded versions
// included: include_retired shows them) and the record each external id names.
type contextModel struct {
	rows map[string]contexts.Record
	xids map[string]string
}

func (m *contextModel) visible(life contexts.Lifecycle) []contexts.Record {
	var out []contexts.Record
	for _, r := range m.rows {
		if life.Visible(&r) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Adds, upserts, PATCHes, deletes and expiring records interleaved with seals, merges and
// compactions: every search, retrieve, list and lookup answers what an exact model of the store
// answers.
func TestContextStoreMatchesAModel(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "m", "embedding_dim": 3, "distance_metric": "cosine"}, nil))
	rng := rand.New(rand.NewPCG(7, 11))
	m := &contextModel{rows: map[string]contexts.Record{}, xids: map[string]string{}}
	words := []string{"alpha", "beta", "gamma", "delta", "payments", "runbook", "deploy", "incident"}
	text := func() string {
		n := 1 + rng.IntN(5)
		s := ""
		for i := 0; i < n; i++ {
			s += words[rng.IntN(len(words))] + " "
		}
		return s
	}
	vec := func() []float32 {
		return []float32{float32(rng.IntN(9) - 4), float32(rng.IntN(9) - 4), float32(rng.IntN(9)-4) + 0.5}
	}
	get := func(id string) contexts.Record {
		var got contexts.RecordResponse
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/m/records/"+id, nil, &got))
		require.NotNil(t, got.Record, id)
		return *got.Record
	}
	liveIDs := func() []string {
		var ids []string
		for id, r := range m.rows {
			if r.SupersededByID == nil {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		return ids
	}
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	steps := 160
	if testStorage != "" {
		steps = 60 // on an object store every step costs round trips
	}
	for step := 0; step < steps; step++ {
		switch op := rng.IntN(20); {
		case op < 6: // add a batch, some with external ids, some expired
			var recs []map[string]any
			for i := 0; i < 1+rng.IntN(4); i++ {
				r := ctxRecord(text(), vec(), "metadata", map[string]any{"team": []string{"a", "b"}[rng.IntN(2)]})
				if rng.IntN(3) == 0 {
					r["external_id"] = fmt.Sprintf("x%d-%d", step, i)
				}
				if rng.IntN(8) == 0 {
					r["expires_at"] = past
				}
				recs = append(recs, r)
			}
			for _, id := range addContext(t, w, "m", recs...) {
				r := get(id)
				m.rows[id] = r
				if r.ExternalID != nil {
					m.xids[*r.ExternalID] = id
				}
			}
		case op < 9: // upsert an existing external id or a new one
			xid := fmt.Sprintf("u%d", rng.IntN(6))
			var up contexts.UpsertResponse
			w.do(t, "PUT", "/api/v1/contexts/m/records", map[string]any{"record": ctxRecord(text(), vec(), "external_id", xid)}, &up)
			old, held := m.xids[xid]
			require.Equal(t, !held, up.Inserted, "step %d", step)
			if held {
				require.Equal(t, old, *up.ReplacedID)
				o := m.rows[old]
				o.SupersededByID = &up.Record.ID
				m.rows[old] = o
			}
			m.rows[up.Record.ID] = up.Record
			m.xids[xid] = up.Record.ID
		case op < 12: // PATCH a live record
			ids := liveIDs()
			if len(ids) == 0 {
				continue
			}
			id := ids[rng.IntN(len(ids))]
			patch := map[string]any{"metadata": map[string]any{"team": "c", "step": step}}
			if rng.IntN(4) == 0 {
				patch["retired_at"] = past
			}
			if rng.IntN(3) == 0 {
				patch["embedding"] = vec()
			}
			var upd contexts.UpdateResponse
			require.Equal(t, http.StatusOK, w.do(t, "PATCH", "/api/v1/contexts/m/records", map[string]any{"id": id, "patch": patch}, &upd))
			require.True(t, upd.Updated, "step %d", step)
			o := m.rows[id]
			o.SupersededByID = &upd.Record.ID
			m.rows[id] = o
			m.rows[upd.Record.ID] = *upd.Record
			if upd.Record.ExternalID != nil {
				m.xids[*upd.Record.ExternalID] = upd.Record.ID
			}
		case op < 14: // delete by id
			ids := liveIDs()
			if len(ids) == 0 {
				continue
			}
			id := ids[rng.IntN(len(ids))]
			var del contexts.DeleteResponse
			require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/contexts/m/records/"+id, nil, &del))
			require.True(t, del.Deleted)
			if xid := m.rows[id].ExternalID; xid != nil && m.xids[*xid] == id {
				delete(m.xids, *xid)
			}
			delete(m.rows, id)
		case op < 16:
			require.Equal(t, http.StatusNoContent, w.do(t, "POST", "/api/v1/contexts/m/flush", nil, nil))
		case op < 18:
			require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/contexts/m/merge-wal", nil, nil))
		default:
			require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/contexts/m/compact", nil, nil))
		}
		if step%8 == 7 {
			checkContextModel(t, w, m, rng, vec, text)
		}
	}
	checkContextModel(t, w, m, rng, vec, text)
}

func checkContextModel(t *testing.T, w *worker, m *contextModel, rng *rand.Rand, vec func() []float32, text func() string) {
	t.Helper()
	now := time.Now()
	for _, flags := range [][2]bool{{false, false}, {true, true}} {
		life := contexts.Lifecycle{IncludeExpired: flags[0], IncludeRetired: flags[1], Now: now}
		visible := m.visible(life)
		// search: exact cosine ranking with the filter applied first
		q := vec()
		limit := 1 + rng.IntN(8)
		filter := map[string]any{"team": []string{"a", "b", "c"}[rng.IntN(3)]}
		var cands []contexts.Scored
		for _, r := range visible {
			if team := metadataTeam(r); team == filter["team"] && len(r.Embedding) == 3 {
				cands = append(cands, contexts.Scored{ID: r.ID, Value: contexts.Distance("cosine", q, r.Embedding)})
			}
		}
		want := nearestOf(cands, limit)
		res := searchContext(t, w, "m", map[string]any{"query": q, "limit": limit, "filters": filter, "include_expired": flags[0], "include_retired": flags[1]})
		require.Len(t, res, len(want))
		for i := range want {
			require.Equal(t, want[i].ID, res[i].Record.ID, "rank %d", i)
			require.Equal(t, m.rows[want[i].ID].Embedding, res[i].Record.Embedding, "rank %d's embedding", i)
			require.InDelta(t, want[i].Value, res[i].Distance, 1e-6)
		}
		// retrieve: the same channels over the model, fused
		txt := text()
		depth := contexts.CandidateDepth(limit)
		var vcands []contexts.Scored
		for _, r := range visible {
			vcands = append(vcands, contexts.Scored{ID: r.ID, Value: contexts.Distance("cosine", q, r.Embedding)})
		}
		fused := contexts.Fuse(nearestOf(vcands, depth), exactText(t, m, txt, life, depth), limit)
		var rr contexts.RetrieveResponse
		require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/contexts/m/retrieve", map[string]any{"text": txt, "vector": q, "limit": limit,
			"include_expired": flags[0], "include_retired": flags[1]}, &rr))
		require.Len(t, rr.Results, len(fused))
		for i := range fused {
			require.Equal(t, fused[i].ID, rr.Results[i].Record.ID, "retrieve rank %d", i)
			require.Equal(t, m.rows[fused[i].ID].Embedding, rr.Results[i].Record.Embedding, "retrieve rank %d's embedding", i)
			require.Equal(t, m.rows[fused[i].ID].TextPayload, rr.Results[i].Record.TextPayload)
			require.Equal(t, fused[i].Channels, rr.Results[i].MatchedChannels)
			if fused[i].TextScore != nil {
				require.InDelta(t, *fused[i].TextScore, *rr.Results[i].TextScore, 1e-5, "the text score of rank %d", i)
			}
		}
		// list: every visible record in id order
		var list contexts.RecordsResponse
		require.Equal(t, http.StatusOK, w.do(t, "GET", fmt.Sprintf("/api/v1/contexts/m/records?limit=10000&include_expired=%v&include_retired=%v", flags[0], flags[1]), nil, &list))
		require.Len(t, list.Records, len(visible))
		for i := range visible {
			require.Equal(t, visible[i].ID, list.Records[i].ID)
		}
	}
	for xid, id := range m.xids {
		var got contexts.RecordResponse
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/m/records/by-external-id?external_id="+xid, nil, &got))
		require.NotNil(t, got.Record, xid)
		require.Equal(t, id, got.Record.ID, xid)
	}
}

// exactText is the text channel over the model: BM25 with statistics over every record the
// store holds (whatever its lifecycle), the k best visible ones, best first (ties: the smaller id).
func exactText(t *testing.T, m *contextModel, text string, life contexts.Lifecycle, k int) []contexts.Scored {
	q, err := textindex.ParseQuery(text)
	require.NoError(t, err)
	stats := q.NewStats()
	type match struct {
		id  string
		doc textindex.Doc
	}
	var matches []match
	for _, r := range m.rows {
		if r.TextPayload == nil {
			continue
		}
		d, ok := q.Match(*r.TextPayload)
		if !ok {
			stats.AddDoc(d.Len, nil)
			continue
		}
		stats.AddDoc(d.Len, &d)
		if life.Visible(&r) {
			matches = append(matches, match{r.ID, d})
		}
	}
	sc := textindex.NewScorer(stats)
	var out []contexts.Scored
	for _, mt := range matches {
		out = append(out, contexts.Scored{ID: mt.id, Value: sc.Score(mt.doc)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Value != out[j].Value {
			return out[i].Value > out[j].Value
		}
		return out[i].ID < out[j].ID
	})
	return out[:min(k, len(out))]
}

// nearestOf is the k candidates of smallest distance, nearest first (ties: the smaller id).
func nearestOf(cands []contexts.Scored, k int) []contexts.Scored {
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].Value != cands[j].Value {
			return cands[i].Value < cands[j].Value
		}
		return cands[i].ID < cands[j].ID
	})
	return cands[:min(k, len(cands))]
}

func metadataTeam(r contexts.Record) any {
	f, err := contexts.ParseFilters([]byte(`{"team": "a"}`))
	if err == nil && f.Match(&r) {
		return "a"
	}
	for _, team := range []string{"b", "c"} {
		f, _ := contexts.ParseFilters([]byte(`{"team": "` + team + `"}`))
		if f.Match(&r) {
			return team
		}
	}
	return nil
}
