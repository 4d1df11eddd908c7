package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/contexts"
)

// ctxRecord is an add request's record: text, an embedding and extra fields.
func ctxRecord(text string, emb []float32, extra ...any) map[string]any {
	r := map[string]any{"text_payload": text, "embedding": emb}
	for i := 0; i+1 < len(extra); i += 2 {
		r[extra[i].(string)] = extra[i+1]
	}
	return r
}

func addContext(t *testing.T, w *worker, name string, records ...map[string]any) []string {
	t.Helper()
	var res api.AppendResponse
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts/"+name+"/records", map[string]any{"records": records}, &res))
	require.Len(t, res.IDs, len(records))
	return res.IDs
}

func searchContext(t *testing.T, w *worker, name string, req map[string]any) []contexts.SearchResult {
	t.Helper()
	var res contexts.SearchResponse
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/contexts/"+name+"/search", req, &res))
	return res.Results
}

func texts[T any](results []T, text func(T) *string) []string {
	out := []string{}
	for _, r := range results {
		if p := text(r); p != nil {
			out = append(out, *p)
		}
	}
	return out
}

func searchTexts(rs []contexts.SearchResult) []string {
	return texts(rs, func(r contexts.SearchResult) *string { return r.Record.TextPayload })
}

// The registry routes answer lance-context's shapes: create 201 {name, uri, version}, 409 for a
// second create, {"contexts": [...]} for the listing, and a store's version.
func TestContextStoreRegistry(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	var info api.StoreInfo
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "mem", "embedding_dim": 3, "distance_metric": "cosine"}, &info))
	require.Equal(t, "mem", info.Name)
	require.NotNil(t, info.Version)
	status, code := errCode(t, w, "POST", "/api/v1/contexts", map[string]any{"name": "mem", "embedding_dim": 3, "distance_metric": "cosine"})
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, api.CodeAlreadyExists, code)
	var list api.ContextList
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts", nil, &list))
	require.Len(t, list.Contexts, 1)
	require.Equal(t, "mem", list.Contexts[0].Name)
	var raw []byte
	w.do(t, "GET", "/api/v1/contexts?limit=10", nil, &raw)
	require.Contains(t, string(raw), `"contexts":[`)
	var v api.VersionResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/mem/version", nil, &v))
	for _, bad := range []map[string]any{
		{"name": "x1", "distance_metric": "manhattan"},
		{"name": "x2", "embedding_dim": -1},
		{"name": "x3", "id_index_type": "hash"},
		{"name": "x4", "blob_columns": []string{"text_payload"}},
	} {
		status, code := errCode(t, w, "POST", "/api/v1/contexts", bad)
		require.Equal(t, http.StatusBadRequest, status, bad)
		require.Equal(t, api.CodeInvalidRequest, code)
	}
	require.Equal(t, http.StatusNoContent, w.do(t, "DELETE", "/api/v1/contexts/mem", nil, nil))
	status, _ = errCode(t, w, "POST", "/api/v1/contexts/mem/records", map[string]any{"records": []any{ctxRecord("a", nil)}})
	require.Equal(t, http.StatusNotFound, status)
}

// Search ranks by the store's metric over visible records only; filters (built-in fields and
// metadata) apply before ranking; relationships come back only when asked.
func TestContextSearchFiltersAndLifecycle(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "s", "embedding_dim": 3}, nil))
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	addContext(t, w, "s",
		ctxRecord("alpha", []float32{1, 0, 0}, "metadata", map[string]any{"team": "acme", "tags": []string{"runbook"}}),
		ctxRecord("bravo", []float32{0, 1, 0}, "role", "assistant", "metadata", map[string]any{"team": "globex"}),
		ctxRecord("charlie", []float32{0.9, 0.1, 0}, "metadata", map[string]any{"team": "acme"},
			"relationships", []any{map[string]any{"target_id": "doc://runbook", "relation": "cites", "weight": 0.5}}),
		ctxRecord("stale", []float32{1, 0, 0}, "expires_at", past),
	)
	require.Equal(t, []string{"alpha", "charlie", "bravo"}, searchTexts(searchContext(t, w, "s", map[string]any{"query": []float32{1, 0, 0}})))
	require.Equal(t, []string{"alpha", "stale", "charlie", "bravo"},
		searchTexts(searchContext(t, w, "s", map[string]any{"query": []float32{1, 0, 0}, "include_expired": true}))[:4])
	require.Equal(t, []string{"alpha", "charlie"},
		searchTexts(searchContext(t, w, "s", map[string]any{"query": []float32{1, 0, 0}, "filters": map[string]any{"team": "acme"}})))
	require.Equal(t, []string{"bravo"},
		searchTexts(searchContext(t, w, "s", map[string]any{"query": []float32{1, 0, 0}, "filters": map[string]any{"role": "assistant"}})))
	require.Equal(t, []string{"alpha"},
		searchTexts(searchContext(t, w, "s", map[string]any{"query": []float32{1, 0, 0}, "filters": map[string]any{"tags": map[string]any{"contains": "runbook"}}})))
	res := searchContext(t, w, "s", map[string]any{"query": []float32{0.9, 0.1, 0}, "limit": 1})
	require.Len(t, res, 1)
	require.Empty(t, res[0].Record.Relationships, "relationships only when asked")
	require.InDelta(t, 0, res[0].Distance, 1e-6, "l2 distance of the record to itself")
	res = searchContext(t, w, "s", map[string]any{"query": []float32{0.9, 0.1, 0}, "limit": 1, "include_relationships": true})
	require.Len(t, res[0].Record.Relationships, 1)

	var related contexts.RecordsResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/s/records/related?target_id=doc://runbook&relation=cites", nil, &related))
	require.Len(t, related.Records, 1)
	require.Equal(t, "charlie", *related.Records[0].TextPayload)

	var list contexts.RecordsResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/s/records?limit=2", nil, &list))
	require.Equal(t, []string{"alpha", "bravo"}, texts(list.Records, func(r contexts.Record) *string { return r.TextPayload }), "creation order")
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/s/records?offset=2&include_expired=true", nil, &list))
	require.Equal(t, []string{"charlie", "stale"}, texts(list.Records, func(r contexts.Record) *string { return r.TextPayload }))
	require.Equal(t, http.StatusOK, w.do(t, "GET", `/api/v1/contexts/s/records?filters={"role":"assistant"}`, nil, &list))
	require.Len(t, list.Records, 1)
}

// Upsert by external id, PATCH (the successor supersedes the original, hidden by default), get
// by external id, delete by external id and by id.
func TestContextUpsertUpdateDelete(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "u", "embedding_dim": 2}, nil))
	var up contexts.UpsertResponse
	require.Equal(t, http.StatusCreated, w.do(t, "PUT", "/api/v1/contexts/u/records",
		map[string]any{"record": ctxRecord("v1", []float32{1, 0}, "external_id", "doc-1"), "key": "external_id"}, &up))
	require.True(t, up.Inserted)
	first := up.Record.ID
	require.Equal(t, http.StatusOK, w.do(t, "PUT", "/api/v1/contexts/u/records",
		map[string]any{"record": ctxRecord("v2", []float32{1, 0}, "external_id", "doc-1")}, &up))
	require.False(t, up.Inserted)
	require.Equal(t, first, *up.ReplacedID)
	second := up.Record.ID
	require.Equal(t, first, *up.Record.SupersedesID)

	var got contexts.RecordResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/u/records/by-external-id?external_id=doc-1", nil, &got))
	require.Equal(t, second, got.Record.ID)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/u/records/"+first, nil, &got))
	require.Equal(t, second, *got.Record.SupersededByID, "the original names its successor")
	require.Equal(t, []string{"v2"}, searchTexts(searchContext(t, w, "u", map[string]any{"query": []float32{1, 0}})))
	require.Equal(t, []string{"v1", "v2"}, sortedStrings(searchTexts(searchContext(t, w, "u", map[string]any{"query": []float32{1, 0}, "include_retired": true}))))

	status, code := errCode(t, w, "POST", "/api/v1/contexts/u/records", map[string]any{"records": []any{ctxRecord("dup", nil, "external_id", "doc-1")}})
	require.Equal(t, http.StatusConflict, status, "add does not take a held external id")
	require.Equal(t, api.CodeAlreadyExists, code)

	var upd contexts.UpdateResponse
	require.Equal(t, http.StatusOK, w.do(t, "PATCH", "/api/v1/contexts/u/records",
		map[string]any{"external_id": "doc-1", "patch": map[string]any{"metadata": map[string]any{"revision": 3}}}, &upd))
	require.True(t, upd.Updated)
	require.Equal(t, second, *upd.ReplacedID)
	require.JSONEq(t, `{"revision": 3}`, string(upd.Record.Metadata))
	require.Equal(t, "v2", *upd.Record.TextPayload, "unpatched fields are kept")
	third := upd.Record.ID
	require.Equal(t, http.StatusOK, w.do(t, "PATCH", "/api/v1/contexts/u/records",
		map[string]any{"id": second, "patch": map[string]any{"lifecycle_status": "superseded"}}, &upd))
	require.False(t, upd.Updated, "a superseded version is not updated again")
	require.Equal(t, http.StatusOK, w.do(t, "PATCH", "/api/v1/contexts/u/records",
		map[string]any{"id": third, "patch": map[string]any{"retired_at": time.Now().UTC().Format(time.RFC3339)}}, &upd))
	require.True(t, upd.Updated)
	require.Empty(t, searchContext(t, w, "u", map[string]any{"query": []float32{1, 0}}), "a retired successor is hidden")

	var del contexts.DeleteResponse
	require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/contexts/u/records?external_id=doc-1", nil, &del))
	require.True(t, del.Deleted)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/u/records/by-external-id?external_id=doc-1", nil, &got))
	require.Nil(t, got.Record)
	require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/contexts/u/records?external_id=doc-1", nil, &del))
	require.False(t, del.Deleted)
	require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/contexts/u/records/"+first, nil, &del))
	require.True(t, del.Deleted)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/u/records/"+first, nil, &got))
	require.Nil(t, got.Record)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/u/records/xid:doc-1", nil, &got))
	require.Nil(t, got.Record, "claim rows are never records")

	var batch contexts.UpsertBatchResponse
	require.Equal(t, http.StatusOK, w.do(t, "PUT", "/api/v1/contexts/u/records/batch", map[string]any{"records": []any{
		ctxRecord("a", nil, "external_id", "a"), ctxRecord("b", nil, "external_id", "b")}}, &batch))
	require.Len(t, batch.Results, 2)
	require.True(t, batch.Results[0].Inserted && batch.Results[1].Inserted)
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Retrieve fuses the text and vector channels: a record both channels rank first leads, each
// result names the channels that found it, and text-only or vector-only queries work.
func TestContextRetrieveFusesChannels(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "r", "embedding_dim": 2, "distance_metric": "cosine"}, nil))
	addContext(t, w, "r",
		ctxRecord("the deploy runbook for payments", []float32{1, 0}),
		ctxRecord("lunch menu", []float32{0.9, 0.1}),
		ctxRecord("payments incident review", []float32{0, 1}),
	)
	var res contexts.RetrieveResponse
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/contexts/r/retrieve", map[string]any{"text": "payments runbook", "vector": []float32{1, 0}, "limit": 3}, &res))
	require.Len(t, res.Results, 3)
	require.Equal(t, "the deploy runbook for payments", *res.Results[0].Record.TextPayload)
	require.ElementsMatch(t, []string{contexts.ChannelVector, contexts.ChannelText}, res.Results[0].MatchedChannels)
	require.NotNil(t, res.Results[0].TextScore)
	require.NotNil(t, res.Results[0].VectorDistance)
	for i := 1; i < len(res.Results); i++ {
		require.GreaterOrEqual(t, res.Results[i-1].Score, res.Results[i].Score)
	}
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/contexts/r/retrieve", map[string]any{"text": "incident"}, &res))
	require.Len(t, res.Results, 1)
	require.Equal(t, []string{contexts.ChannelText}, res.Results[0].MatchedChannels)
	require.Nil(t, res.Results[0].VectorDistance)
	status, _ := errCode(t, w, "POST", "/api/v1/contexts/r/retrieve", map[string]any{"text": "x", "fusion": "linear"})
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = errCode(t, w, "POST", "/api/v1/contexts/r/retrieve", map[string]any{})
	require.Equal(t, http.StatusBadRequest, status)
}

// Bad input is a 400 that writes nothing: a wrong dimension, a value that is not a finite
// float32, oversized metadata, a relationship to itself, an empty batch.
func TestContextRejectionsWriteNothing(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "bad", "embedding_dim": 2}, nil))
	good := ctxRecord("ok", []float32{1, 0})
	for name, body := range map[string]string{
		"dimension":     `{"records": [{"text_payload": "ok", "embedding": [1, 0]}, {"embedding": [1, 2, 3]}]}`,
		"overflow":      `{"records": [{"embedding": [1e39, 0]}]}`,
		"nan":           `{"records": [{"embedding": ["NaN", 0]}]}`,
		"metadata":      `{"records": [{"metadata": {"x": "` + strings.Repeat("a", contexts.MaxMetadataBytes) + `"}}]}`,
		"self":          `{"records": [{"external_id": "e", "relationships": [{"target_id": "e", "relation": "is"}]}]}`,
		"empty":         `{"records": []}`,
		"unknown field": `{"records": [{"txt": "x"}]}`,
		"bad base64":    `{"records": [{"binary_payload": "!!"}]}`,
		"dup xid":       `{"records": [{"external_id": "d"}, {"external_id": "d"}]}`,
	} {
		status, code := errCode(t, w, "POST", "/api/v1/contexts/bad/records", body)
		require.Equal(t, http.StatusBadRequest, status, name)
		require.Equal(t, api.CodeInvalidRequest, code, name)
	}
	for name, body := range map[string]any{
		"query dimension": map[string]any{"query": []float32{1}},
		"no query":        map[string]any{"query": []float32{}},
		"limit":           map[string]any{"query": []float32{1, 0}, "limit": 0},
		"filters":         map[string]any{"query": []float32{1, 0}, "filters": []int{1}},
	} {
		status, _ := errCode(t, w, "POST", "/api/v1/contexts/bad/search", body)
		require.Equal(t, http.StatusBadRequest, status, name)
	}
	var list contexts.RecordsResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/bad/records?include_expired=true&include_retired=true", nil, &list))
	require.Empty(t, list.Records, "nothing of a rejected request was written")
	addContext(t, w, "bad", good)
}

// A record is searchable as soon as its add is acknowledged on the worker that took it, and on
// every worker once sealed (?flush=true); a merge into the base table changes no answer.
func TestContextSearchSeesTheWALAndTheBaseTable(t *testing.T) {
	c := newCluster(t)
	w1, w2 := c.worker("w1"), c.worker("w2")
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "f", "embedding_dim": 2}, nil))
	addContext(t, w1, "f", ctxRecord("memtable", []float32{1, 0}))
	require.Equal(t, []string{"memtable"}, searchTexts(searchContext(t, w1, "f", map[string]any{"query": []float32{1, 0}})))
	require.Empty(t, searchContext(t, w2, "f", map[string]any{"query": []float32{1, 0}}), "unsealed rows are the writer's")
	var res api.AppendResponse
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/contexts/f/records?flush=true", map[string]any{"records": []any{ctxRecord("sealed", []float32{0, 1})}}, &res))
	require.Equal(t, []string{"memtable", "sealed"}, searchTexts(searchContext(t, w2, "f", map[string]any{"query": []float32{1, 0}})))
	var merged api.MergeWALResponse
	require.Equal(t, http.StatusOK, w1.do(t, "POST", "/api/v1/contexts/f/merge-wal", nil, &merged))
	require.Equal(t, []string{"memtable", "sealed"}, searchTexts(searchContext(t, w2, "f", map[string]any{"query": []float32{1, 0}})))
	var payload []byte
	require.Equal(t, http.StatusOK, w2.do(t, "GET", "/api/v1/contexts/f/records/"+res.IDs[0]+"/payload", nil, &payload))
	require.Equal(t, "sealed", string(payload))
}

// A selective filter: the nearest records are all filtered out, so the vector channel asks again
// for more (reading only what the filter needs) until the limit is filled, then answers the
// winners whole, embeddings included.
func TestContextSearchLooksFurtherWhenFiltersTakePlaces(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "sel", "embedding_dim": 2}, nil))
	var recs []map[string]any
	for i := range 120 {
		recs = append(recs, ctxRecord(fmt.Sprint("near ", i), []float32{1, float32(i) / 1000}, "metadata", map[string]any{"team": "a"}))
	}
	for i := range 3 {
		recs = append(recs, ctxRecord(fmt.Sprint("far ", i), []float32{-1, float32(i)}, "metadata", map[string]any{"team": "b"}))
	}
	addContext(t, w, "sel", recs...)
	res := searchContext(t, w, "sel", map[string]any{"query": []float32{1, 0}, "limit": 2, "filters": map[string]any{"team": "b"}})
	require.Equal(t, []string{"far 0", "far 1"}, searchTexts(res))
	for _, r := range res {
		require.Len(t, r.Record.Embedding, 2, "the embedding comes back")
		require.JSONEq(t, `{"team": "b"}`, string(r.Record.Metadata))
		require.Equal(t, "user", r.Record.Role, "read whole")
	}
	require.Len(t, searchContext(t, w, "sel", map[string]any{"query": []float32{1, 0}, "limit": 10, "filters": map[string]any{"team": "b"}}), 3,
		"fewer matches than the limit: every one, and the read ends when the store has no more")
}
