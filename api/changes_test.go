package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
)

// feedLines reads a JSON-lines changes answer: its rows and the cursor of its last line.
func feedLines(t *testing.T, w *worker, path string) (rows []map[string]any, cursor string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "application/x-ndjson", rec.Header().Get("Content-Type"))
	sc := bufio.NewScanner(rec.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		if c, ok := m["_cursor"]; ok {
			cursor = c.(string)
			require.EqualValues(t, len(rows), m["_rows"])
			require.Equal(t, cursor, rec.Header().Get(api.HeaderFeedCursor))
			continue
		}
		rows = append(rows, m)
	}
	require.NotEmpty(t, cursor, "the last line carries the cursor")
	return rows, cursor
}

// feedIDs are the rows' ids in the order delivered.
func feedIDs(rows []map[string]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(r["id"])
	}
	return out
}

func appendGeneric(t *testing.T, w *worker, store string, flush bool, rows ...map[string]any) {
	t.Helper()
	q := ""
	if flush {
		q = "?flush=true"
	}
	list := make([]any, len(rows))
	for i, r := range rows {
		list[i] = r
	}
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/"+store+"/rows"+q, map[string]any{"rows": list}, nil))
}

// feedTestOnTheMainPassOnly skips a feed test whose subject is the HTTP layer (formats, long
// polls, groups, refusals) in make test's object-store passes: the consumer and read-token tests
// run there too, and the storage tests cover the feed on every store.
func feedTestOnTheMainPassOnly(t *testing.T) {
	if testStorage != "" {
		t.Skipf("the main pass runs it; the %s pass runs the consumer and read-token tests", testStorage)
	}
}

// A named consumer reads on any worker what any worker sealed, resumes from its committed
// cursor (what it did not commit comes again), survives a merge (its rows are kept), and goes
// with its store.
func TestChangeFeedConsumersAcrossWorkers(t *testing.T) {
	c := newCluster(t)
	w1, w2 := c.worker("w1"), c.worker("w2")
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/generic", `{"name": "f", "schema": {"columns": [["id", "string"], ["step", "int64"]]}}`, nil))
	var cons api.ConsumerInfo
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/generic/f/consumers", map[string]any{"name": "trainer"}, &cons))
	require.NotEmpty(t, cons.Cursor)
	status, code := errCode(t, w1, "POST", "/api/v1/generic/f/consumers", map[string]any{"name": "trainer"})
	require.Equal(t, http.StatusConflict, status, code)

	appendGeneric(t, w1, "f", true, map[string]any{"id": "a", "step": 1}, map[string]any{"id": "b", "step": 2})
	appendGeneric(t, w2, "f", false, map[string]any{"id": "unsealed", "step": 0}) // not visible until sealed
	rows, cur := feedLines(t, w2, "/api/v1/generic/f/changes?consumer=trainer")
	require.ElementsMatch(t, []string{"a", "b"}, feedIDs(rows))
	require.Equal(t, "upsert", rows[0]["_op"])
	require.NotNil(t, rows[0]["_seq"])
	// Not committed: a restart reads the same rows again.
	again, _ := feedLines(t, w1, "/api/v1/generic/f/changes?consumer=trainer")
	require.ElementsMatch(t, []string{"a", "b"}, feedIDs(again))
	require.Equal(t, http.StatusOK, w1.do(t, "POST", "/api/v1/generic/f/consumers/trainer/commit", map[string]any{"cursor": cur}, nil))

	// A delete, an update on another worker, and a merge of everything before the consumer reads.
	require.Equal(t, http.StatusNoContent, w2.do(t, "POST", "/api/v1/generic/f/flush", nil, nil))
	require.Equal(t, http.StatusOK, w1.do(t, "DELETE", "/api/v1/generic/f/rows/a?flush=true", nil, nil))
	appendGeneric(t, w2, "f", true, map[string]any{"id": "b", "step": 20})
	require.Equal(t, http.StatusOK, w1.do(t, "POST", "/api/v1/generic/f/merge-wal", nil, nil))
	rows, cur = feedLines(t, w2, "/api/v1/generic/f/changes?consumer=trainer&limit=10")
	got := map[string]string{}
	for _, r := range rows {
		got[r["id"].(string)] = r["_op"].(string)
		if r["id"] == "b" {
			require.EqualValues(t, 20, r["step"])
		}
	}
	require.Equal(t, map[string]string{"unsealed": "upsert", "a": "delete", "b": "upsert"}, got)
	require.Equal(t, http.StatusOK, w2.do(t, "POST", "/api/v1/generic/f/consumers/trainer/commit", map[string]any{"cursor": cur}, nil))
	require.Contains(t, metricsText(t, w2), `strata_feed_consumer_lag_seconds_count{kind="generic"} 1`, "each commit observes the consumer's lag")
	require.Contains(t, metricsText(t, w2), `strata_feed_rows_total{kind="generic"}`)
	var list struct {
		Consumers []api.ConsumerInfo `json:"consumers"`
	}
	require.Equal(t, http.StatusOK, w1.do(t, "GET", "/api/v1/generic/f/consumers", nil, &list))
	require.Len(t, list.Consumers, 1)
	require.Zero(t, *list.Consumers[0].LagGenerations)

	// Deleting the store drops its consumers.
	require.Equal(t, http.StatusNoContent, w1.do(t, "DELETE", "/api/v1/generic/f", nil, nil))
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/generic", `{"name": "f", "schema": {"columns": [["id", "string"]]}}`, nil))
	status, _ = errCode(t, w1, "GET", "/api/v1/generic/f/consumers/trainer", nil)
	require.Equal(t, http.StatusNotFound, status)
}

// A long poll on one worker returns as soon as a flush on another seals rows (the seal's
// notification wakes it: its poll interval here is a minute); the Arrow and server-sent-event
// answers carry the same rows and a cursor.
func TestChangeFeedLongPollAndFormats(t *testing.T) {
	feedTestOnTheMainPassOnly(t)
	c := newCluster(t)
	w1, w2 := c.worker("w1"), c.worker("w2", func(d *api.Deps) { d.FeedPollInterval = time.Minute })
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "r"}, nil))
	_, head := feedLines(t, w2, "/api/v1/rollouts/r/changes")
	done := make(chan []map[string]any, 1)
	start := time.Now()
	go func() {
		rows, _ := feedLines(t, w2, "/api/v1/rollouts/r/changes?wait=20s&cursor="+url.QueryEscape(head))
		done <- rows
	}()
	time.Sleep(300 * time.Millisecond) // the poll has looked once and waits
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts/r/records?flush=true", map[string]any{"records": []any{rollout("x", "t")}}, nil))
	select {
	case rows := <-done:
		require.Equal(t, []string{"x"}, feedIDs(rows))
		require.Less(t, time.Since(start), 10*time.Second, "woken by the seal's notification, not its poll")
	case <-time.After(15 * time.Second):
		t.Fatal("the long poll did not return the sealed row")
	}

	// Arrow: the rows, the cursor in the schema's metadata.
	req := httptest.NewRequest("GET", "/api/v1/rollouts/r/changes?format=arrow&cursor="+url.QueryEscape(head), nil)
	rec := httptest.NewRecorder()
	w2.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rd, err := ipc.NewReader(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err)
	cursor, ok := rd.Schema().Metadata().GetValue(api.FeedCursorMetadata)
	require.True(t, ok)
	require.NotEmpty(t, cursor)
	n := 0
	for rd.Next() {
		n += int(rd.RecordBatch().NumRows())
	}
	rd.Release()
	require.Equal(t, 1, n)

	// Server-sent events: one "rows" event whose id is the cursor.
	req = httptest.NewRequest("GET", "/api/v1/rollouts/r/changes?wait=1s&cursor="+url.QueryEscape(head), nil)
	req.Header.Set("Accept", "text/event-stream")
	rec = httptest.NewRecorder()
	w2.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	require.Contains(t, body, "event: rows\nid: ")
	var data struct {
		Rows   []map[string]any `json:"rows"`
		Cursor string           `json:"cursor"`
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "data: ") {
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data))
			break
		}
	}
	require.Equal(t, []string{"x"}, feedIDs(data.Rows))
	require.Contains(t, body, "id: "+data.Cursor+"\n")
}

// Complete groups through the API: a group's rows come out once all its members are sealed.
func TestChangeFeedCompleteGroups(t *testing.T) {
	feedTestOnTheMainPassOnly(t)
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "schema": {"columns": [["id", "string"], ["prompt", "string"]]}}`, nil))
	_, cur := feedLines(t, w, "/api/v1/generic/g/changes")
	path := func(c string) string {
		return "/api/v1/generic/g/changes?complete_by=prompt&group_size=3&cursor=" + url.QueryEscape(c)
	}
	appendGeneric(t, w, "g", true, map[string]any{"id": "p1-a", "prompt": "p1"}, map[string]any{"id": "p2-a", "prompt": "p2"}, map[string]any{"id": "p1-b", "prompt": "p1"})
	rows, cur := feedLines(t, w, path(cur))
	require.Empty(t, rows, "no group is complete yet")
	appendGeneric(t, w, "g", true, map[string]any{"id": "p1-c", "prompt": "p1"})
	rows, cur = feedLines(t, w, path(cur))
	require.ElementsMatch(t, []string{"p1-a", "p1-b", "p1-c"}, feedIDs(rows))
	for _, r := range rows {
		require.Equal(t, true, r["_complete"])
	}
	appendGeneric(t, w, "g", true, map[string]any{"id": "p2-b", "prompt": "p2"}, map[string]any{"id": "p2-c", "prompt": "p2"})
	rows, _ = feedLines(t, w, path(cur))
	require.ElementsMatch(t, []string{"p2-a", "p2-b", "p2-c"}, feedIDs(rows))
}

// Hostile or wrong requests are 4xx with the envelope, never 500; a position whose rows were
// released is 410 CURSOR_EXPIRED with a restart point that works.
func TestChangeFeedRefusalsAndExpiry(t *testing.T) {
	feedTestOnTheMainPassOnly(t)
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "h", "schema": {"columns": [["id", "string"], ["step", "int64"]]}}`, nil))
	_, head := feedLines(t, w, "/api/v1/generic/h/changes")
	for _, q := range []string{
		"cursor=AAAA", "cursor=AQ", "cursor=" + url.QueryEscape(head) + "&consumer=x", "limit=0", "limit=1000001", "wait=1h", "wait=-1s",
		"complete_by=step", "complete_by=nope&group_size=2", "group_size=2", "complete_by=_seq&group_size=2", "format=xml",
		"start=yesterday", "columns=nope", "complete_by=step&group_size=2&group_timeout=forever",
	} {
		status, code := errCode(t, w, "GET", "/api/v1/generic/h/changes?"+q, nil)
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Equal(t, api.CodeInvalidRequest, code, q)
	}
	status, _ := errCode(t, w, "GET", "/api/v1/generic/h/changes?consumer=nobody", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = errCode(t, w, "POST", "/api/v1/generic/h/consumers", map[string]any{"name": "../x"})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/h/consumers", map[string]any{"name": "c"}, nil))
	status, _ = errCode(t, w, "POST", "/api/v1/generic/h/consumers/c/commit", map[string]any{"cursor": "not a cursor"})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, http.StatusNoContent, w.do(t, "DELETE", "/api/v1/generic/h/consumers/c", nil, nil))

	// No consumer holds the rows: a merge releases them, and an old cursor expires.
	appendGeneric(t, w, "h", true, map[string]any{"id": "a", "step": 1})
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/generic/h/merge-wal", nil, nil))
	appendGeneric(t, w, "h", true, map[string]any{"id": "b", "step": 2})
	var env api.ErrorBody
	require.Equal(t, http.StatusGone, w.do(t, "GET", "/api/v1/generic/h/changes?cursor="+url.QueryEscape(head), nil, &env))
	require.Equal(t, api.CodeCursorExpired, env.Error.Code)
	require.NotNil(t, env.Error.Restart)
	require.Contains(t, metricsText(t, w), "strata_feed_cursor_expired_total 1")
	var page api.RowsPage
	require.Equal(t, http.StatusOK, w.do(t, "GET", fmt.Sprintf("/api/v1/generic/h/rows?source=base&version=%d", env.Error.Restart.TableVersion), nil, &page))
	require.Equal(t, []string{"a"}, idsOfRows(t, page.Rows))
	rows, _ := feedLines(t, w, "/api/v1/generic/h/changes?cursor="+url.QueryEscape(env.Error.Restart.Cursor))
	require.Equal(t, []string{"b"}, feedIDs(rows))
}

// metricsText is the worker's /metrics answer.
func metricsText(t *testing.T, w *worker) string {
	var body []byte
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/metrics", nil, &body))
	return string(body)
}

func idsOfRows(t *testing.T, raw []json.RawMessage) []string {
	var out []string
	for _, r := range rowsOf(t, raw) {
		out = append(out, r["id"].(string))
	}
	return out
}

// A read token answers the same rows on any worker after writes, merges, compactions and
// cleanups, until it is released (410 after); a token naming a store that does not exist is
// refused whole.
func TestReadTokensAnswerTheirCut(t *testing.T) {
	c := newCluster(t)
	w1, w2 := c.worker("w1"), c.worker("w2")
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/generic", `{"name": "a", "schema": {"columns": [["id", "string"], ["step", "int64"]]}}`, nil))
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "r"}, nil))
	appendGeneric(t, w1, "a", true, map[string]any{"id": "x", "step": 1}, map[string]any{"id": "y", "step": 1})
	require.Equal(t, http.StatusOK, w1.do(t, "POST", "/api/v1/generic/a/merge-wal", nil, nil))
	appendGeneric(t, w2, "a", true, map[string]any{"id": "y", "step": 2})
	require.Equal(t, http.StatusCreated, w2.do(t, "POST", "/api/v1/rollouts/r/records?flush=true", map[string]any{"records": []any{rollout("q", "t")}}, nil))

	var snap api.SnapshotInfo
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/snapshots", map[string]any{"stores": []string{"generic/a", "rollouts/r"}, "ttl": "1h"}, &snap))
	require.Len(t, snap.Stores, 2)
	read := func(w *worker) (map[string]float64, int) {
		var page api.RowsPage
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/a/rows?snapshot="+snap.ID, nil, &page))
		got := map[string]float64{}
		for _, r := range rowsOf(t, page.Rows) {
			got[r["id"].(string)] = r["step"].(float64)
		}
		var recs api.RecordsPage
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/r/records?snapshot="+snap.ID, nil, &recs))
		return got, len(recs.Records)
	}
	want := map[string]float64{"x": 1, "y": 2}
	got, n := read(w2)
	require.Equal(t, want, got)
	require.Equal(t, 1, n)

	appendGeneric(t, w1, "a", true, map[string]any{"id": "z", "step": 3}, map[string]any{"id": "x", "step": 9})
	require.Equal(t, http.StatusOK, w1.do(t, "DELETE", "/api/v1/generic/a/rows/y?flush=true", nil, nil))
	require.Equal(t, http.StatusOK, w2.do(t, "POST", "/api/v1/generic/a/merge-wal", nil, nil))
	require.Equal(t, http.StatusCreated, w1.do(t, "POST", "/api/v1/rollouts/r/records?flush=true", map[string]any{"records": []any{rollout("q2", "t")}}, nil))
	require.Equal(t, http.StatusOK, w1.do(t, "POST", "/api/v1/internal/merge-wal/r", nil, nil))
	require.Equal(t, http.StatusOK, w1.do(t, "POST", "/api/v1/rollouts/r/compact", nil, nil))
	got, n = read(w1)
	require.Equal(t, want, got, "the token's cut, not the store now")
	require.Equal(t, 1, n)
	var row map[string]any
	require.Equal(t, http.StatusOK, w1.do(t, "GET", "/api/v1/generic/a/rows/y?snapshot="+snap.ID, nil, &row))
	require.Contains(t, fmt.Sprint(row), "2")

	var list struct {
		Snapshots []api.SnapshotInfo `json:"snapshots"`
	}
	require.Equal(t, http.StatusOK, w1.do(t, "GET", "/api/v1/snapshots", nil, &list))
	require.Len(t, list.Snapshots, 1)
	require.Equal(t, 2, list.Snapshots[0].StoreCount)

	require.Equal(t, http.StatusNoContent, w1.do(t, "DELETE", "/api/v1/snapshots/"+snap.ID, nil, nil))
	status, code := errCode(t, w2, "GET", "/api/v1/generic/a/rows?snapshot="+snap.ID, nil)
	require.Equal(t, http.StatusGone, status)
	require.Equal(t, api.CodeSnapshotExpired, code)

	for _, body := range []map[string]any{
		{"stores": []string{"generic/a", "generic/missing"}},
		{"stores": []string{"nokind/a"}},
		{"stores": []string{"generic/a", "generic/a"}},
		{"stores": []string{}},
		{"stores": []string{"generic/a"}, "ttl": "100000h"},
		{"stores": []string{"generic/../a"}},
	} {
		status, _ := errCode(t, w1, "POST", "/api/v1/snapshots", body)
		require.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, status, body)
	}
	status, _ = errCode(t, w1, "GET", "/api/v1/generic/a/rows?snapshot=snap-nope", nil)
	require.Equal(t, http.StatusNotFound, status)
}

// Context stores' listing and get take ?snapshot= as well.
func TestReadTokensOnContextStores(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts", map[string]any{"name": "mem"}, nil))
	var added struct {
		IDs []string `json:"ids"`
	}
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts/mem/records?flush=true",
		map[string]any{"records": []any{map[string]any{"text_payload": "one"}, map[string]any{"text_payload": "two"}}}, &added))
	var snap api.SnapshotInfo
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/snapshots", map[string]any{"stores": []string{"context/mem"}}, &snap))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/contexts/mem/records?flush=true",
		map[string]any{"records": []any{map[string]any{"text_payload": "three"}}}, nil))
	require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/contexts/mem/records/"+added.IDs[0]+"?flush=true", nil, nil))
	var list struct {
		Records []map[string]any `json:"records"`
	}
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/mem/records?snapshot="+snap.ID, nil, &list))
	require.Len(t, list.Records, 2, "the token's cut: both first records, not the third")
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/mem/records", nil, &list))
	require.Len(t, list.Records, 2, "now: the second and the third")
	var one struct {
		Record map[string]any `json:"record"`
	}
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/mem/records/"+added.IDs[0]+"?snapshot="+snap.ID, nil, &one))
	require.NotNil(t, one.Record, "deleted since, present in the cut")
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/contexts/mem/records/"+added.IDs[0], nil, &one))
	require.Nil(t, one.Record)
}
