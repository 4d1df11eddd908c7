package api_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/datagen"
)

// dgEvent builds one wire event of item (root derived from it) at seq in checkpoint cp.
func dgEvent(item string, seq int64, cp string, ordinal uint32, typ string, extra ...any) map[string]any {
	root := item
	for i := range item {
		if item[i] == '/' {
			root = item[:i]
			break
		}
	}
	e := map[string]any{"event_id": datagen.EventID(item, cp, ordinal), "item_id": item, "root_item_id": root, "item_seq": seq,
		"checkpoint_id": cp, "event_type": typ, "attempt": 0, "run_id": "run-1", "writer_epoch": "w-1", "schema_version": 2}
	if root != item {
		e["parent_item_id"] = item[:strings.LastIndexByte(item, '/')]
	}
	for i := 0; i+1 < len(extra); i += 2 {
		e[extra[i].(string)] = extra[i+1]
	}
	return e
}

func leaf(step string, index int) []any {
	return []any{"step_name", step, "step_kind", "leaf", "step_index", index, "enclosing_step", "main"}
}

func field(name, kind string, value any) []any {
	v := map[string]any{"kind": kind}
	if kind == "blob" {
		v["bytes"] = value
	} else {
		v["value"] = value
	}
	return []any{"field_name", name, "field_type", kind, "codec_version", 1, "value", v}
}

func cat(parts ...[]any) []any {
	var out []any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func events(evs ...map[string]any) map[string]any { return map[string]any{"events": evs} }

func TestDatagenStoreLifecycleFoldsAndLenses(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w0")
	var info api.StoreInfo
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen", map[string]any{"name": "exp"}, &info))
	require.Equal(t, "exp", info.Name)
	require.NotNil(t, info.Version)
	status, code := errCode(t, w, "POST", "/api/v1/datagen", map[string]any{"name": "exp"})
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "ALREADY_EXISTS", code)

	var appended api.AppendResponse
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen/exp/events",
		events(dgEvent("5", 0, "created", 0, "ITEM_CREATED", "status", "running", "query_tags", map[string]any{"split": "train"}),
			dgEvent("5", 1, "main-0", 0, "STEP_STARTED", "step_name", "main", "step_kind", "sequence", "step_index", 0)), &appended))
	require.Equal(t, 2, appended.Count)

	blob := []byte("\x00\x01binary")
	checkpoint := events(
		dgEvent("5", 2, "gen-0", 0, "FIELD_SET", cat(leaf("gen", 0), field("draft", "str", "v1"))...),
		dgEvent("5", 3, "gen-0", 1, "FIELD_APPEND", cat(leaf("gen", 0), field("revisions", "json", map[string]any{"n": "a"}))...),
		dgEvent("5", 4, "gen-0", 2, "FIELD_SET", cat(leaf("gen", 0), field("image", "blob", base64.StdEncoding.EncodeToString(blob)))...),
		dgEvent("5", 5, "gen-0", 3, "STEP_COMPLETED", leaf("gen", 0)...))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen/exp/events?checkpoint=true", checkpoint, &appended))
	require.Equal(t, 4, appended.Count)
	// A retried checkpoint (same deterministic ids) is idempotent.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen/exp/events?checkpoint=true", checkpoint, &appended))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen/exp/events", events(
		dgEvent("5", 6, "gen-1", 0, "FIELD_SET", cat(leaf("gen", 1), field("draft", "str", "v2"))...),
		dgEvent("5", 7, "gen-1", 1, "FIELD_APPEND", cat(leaf("gen", 1), field("revisions", "json", map[string]any{"n": "b"}))...),
		dgEvent("5", 8, "gen-1", 2, "STEP_COMPLETED", leaf("gen", 1)...),
		dgEvent("5", 9, "fail-0", 0, "FAILED", cat(leaf("score", 0), []any{"error_type", "ValueError", "error_dump", "bad"})...),
		dgEvent("5/expand:0", 0, "created", 0, "ITEM_CREATED"),
		dgEvent("5/expand:0", 1, "fail-0", 0, "FAILED", cat(leaf("score", 0), []any{"error_type", "KeyError"})...),
		dgEvent("6", 0, "created", 0, "ITEM_CREATED"),
		dgEvent("6", 1, "end", 0, "TERMINAL", "status", "filtered"),
	), &appended))

	var item api.DatagenItemResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/items/5", nil, &item))
	f := item.Item
	require.NotNil(t, f)
	require.Equal(t, "running", f.Status, "a failure never ends an item")
	require.EqualValues(t, 9, f.LastItemSeq)
	require.Equal(t, `"v2"`, string(f.Fields["draft"].Value.Value))
	require.Equal(t, "set", f.Fields["draft"].Mode)
	require.Equal(t, "append", f.Fields["revisions"].Mode)
	require.Len(t, f.Fields["revisions"].Values, 2)
	require.JSONEq(t, `{"n":"b"}`, string(f.Fields["revisions"].Values[1].Value))
	require.Nil(t, f.Fields["image"].Value.Bytes, "blobs are lazy by default")
	require.EqualValues(t, len(blob), *f.Fields["image"].Value.Size)
	require.Equal(t, datagen.EventID("5", "gen-0", 2), f.BlobEventIDs["image"])
	require.Len(t, f.Trajectory, 2)
	require.Equal(t, "gen", f.Trajectory[1].StepName)
	require.EqualValues(t, 8, f.Trajectory[1].ItemSeq)
	require.Len(t, f.Started, 1)
	require.Len(t, f.Completed, 2)
	require.JSONEq(t, `{"split":"train"}`, string(f.QueryTags))

	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/items/5?load_blobs=true", nil, &item))
	require.Equal(t, blob, item.Item.Fields["image"].Value.Bytes)
	for _, path := range []string{"/api/v1/datagen/exp/blobs/" + f.BlobEventIDs["image"], "/api/v1/datagen/exp/blobs/" + f.BlobEventIDs["image"] + "?item_id=5"} {
		var got []byte
		require.Equal(t, http.StatusOK, w.do(t, "GET", path, nil, &got), path)
		require.Equal(t, blob, got)
	}
	status, code = errCode(t, w, "GET", "/api/v1/datagen/exp/blobs/"+datagen.EventID("5", "gen-0", 0), nil)
	require.Equal(t, http.StatusNotFound, status, "a str field has no blob")
	require.Equal(t, "NOT_FOUND", code)

	var never api.DatagenItemResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/items/7", nil, &never))
	require.Nil(t, never.Item)
	// A sub-item's id holds '/': sent as one percent-encoded path segment.
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/items/5%2Fexpand:0", nil, &item))
	require.NotNil(t, item.Item)
	require.Equal(t, "5", *item.Item.ParentItemID)

	var failures api.DatagenFailuresResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/items/5/failures", nil, &failures))
	require.Len(t, failures.Failures, 1)
	require.Equal(t, "ValueError", failures.Failures[0].ErrorType)
	require.Equal(t, "score", failures.Failures[0].At.StepName)

	var hist api.DatagenEventsResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/items/5/events", nil, &hist))
	require.Len(t, hist.Events, 10)
	for i, e := range hist.Events {
		require.EqualValues(t, i, e.ItemSeq, "item history is in item_seq order")
	}
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/roots/5/events", nil, &hist))
	require.Len(t, hist.Events, 12, "the root's events and its sub-item's")
	require.Equal(t, "5/expand:0", hist.Events[11].ItemID)

	var statuses api.DatagenRootStatusesResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/root-status?ids=5,6,7", nil, &statuses))
	require.Equal(t, map[string]string{"5": "running", "6": "filtered"}, statuses.Statuses)

	var o datagen.Overview
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/overview", nil, &o))
	require.Equal(t, 2, o.Items, "sub-items roll up under their root")
	require.Equal(t, 1, o.Running)
	require.Equal(t, 1, o.Filtered)
	require.Equal(t, 2, o.Failures)
	require.Equal(t, map[string]int{"ValueError": 1, "KeyError": 1}, o.FailuresByErrorType)
	require.Equal(t, map[string]int{"gen": 2}, o.CompletedSteps)
	require.Equal(t, []string{"5"}, o.FailuresByRun["run-1"].SampleRootItemIDs)
	// Later events are folded into the next overview; merged ones too.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen/exp/events", events(dgEvent("5", 10, "end", 0, "TERMINAL", "status", "completed")), nil))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/overview", nil, &o))
	require.Equal(t, 1, o.Completed)
	require.Equal(t, 0, o.Running)
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/datagen/exp/merge-wal", nil, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen/exp/events", events(dgEvent("8", 0, "created", 0, "ITEM_CREATED")), nil))
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/datagen/exp/merge-wal", nil, nil))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/overview", nil, &o))
	require.Equal(t, 3, o.Items)
	require.Equal(t, 1, o.Running)
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/items/5", nil, &item))
	require.Equal(t, "completed", item.Item.Status, "a merged store folds the same")

	var list api.StoreList
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen", nil, &list))
	require.Len(t, list.Stores, 1)
	require.Equal(t, http.StatusNoContent, w.do(t, "DELETE", "/api/v1/datagen/exp", nil, nil))
	status, _ = errCode(t, w, "GET", "/api/v1/datagen/exp/items/5", nil)
	require.Equal(t, http.StatusNotFound, status)
}

// Every rejected append answers 400 (413 for an oversized blob) and writes nothing.
func TestDatagenRejectsBadBatchesWhole(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w0")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen", map[string]any{"name": "exp"}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/datagen/exp/events",
		events(dgEvent("5", 0, "created", 0, "ITEM_CREATED"), dgEvent("5", 1, "gen-0", 0, "STEP_COMPLETED", leaf("gen", 0)...)), nil))
	good := dgEvent("9", 0, "created", 0, "ITEM_CREATED")
	for name, body := range map[string]any{
		"bad type, after a good event":  events(good, dgEvent("9", 1, "x", 0, "NOPE")),
		"missing item_seq":              `{"events":[{"event_id":"e","item_id":"9","root_item_id":"9","checkpoint_id":"c","event_type":"ITEM_CREATED","run_id":"r","writer_epoch":"w","schema_version":2}]}`,
		"duplicate item_seq in a batch": events(good, dgEvent("9", 0, "other", 0, "STEP_COMPLETED", leaf("gen", 0)...)),
		"item_seq not above the stored": events(good, dgEvent("5", 1, "gen-9", 0, "STEP_COMPLETED", leaf("gen", 9)...)),
		"empty":                         events(),
		"not JSON":                      `{"events": [`,
		"invalid UTF-8":                 "{\"events\": [\"\xff\"]}",
		"checkpoint of two items":       nil,
		"inconsistent root":             events(good, dgEvent("9", 1, "x", 0, "ITEM_CREATED", "root_item_id", "8")),
	} {
		path := "/api/v1/datagen/exp/events"
		if body == nil {
			path += "?checkpoint=true"
			body = events(dgEvent("9", 1, "c", 0, "STEP_COMPLETED", leaf("gen", 0)...), dgEvent("10", 1, "c", 1, "STEP_COMPLETED", leaf("gen", 0)...))
		}
		status, code := errCode(t, w, "POST", path, body)
		require.Equal(t, http.StatusBadRequest, status, name)
		require.Equal(t, "INVALID_REQUEST", code, name)
	}
	var item api.DatagenItemResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/items/9", nil, &item))
	require.Nil(t, item.Item, "nothing of a rejected batch was written")
	var hist api.DatagenEventsResponse
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/datagen/exp/roots/5/events", nil, &hist))
	require.Len(t, hist.Events, 2)
}

// A checkpoint is visible whole or not at all to a reader on another worker, while appends go
// on: every fold shows, for each completed step, both of its fields.
func TestDatagenCheckpointsAreAtomicForReadersOnAnotherWorker(t *testing.T) {
	c := newCluster(t)
	writer, reader := c.worker("w0"), c.worker("w1")
	require.Equal(t, http.StatusCreated, writer.do(t, "POST", "/api/v1/datagen", map[string]any{"name": "exp"}, nil))
	require.Equal(t, http.StatusCreated, writer.do(t, "POST", "/api/v1/datagen/exp/events", events(dgEvent("5", 0, "created", 0, "ITEM_CREATED")), nil))
	const steps = 30
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for i := range steps {
			cp := fmt.Sprintf("gen-%d", i)
			seq := int64(1 + 3*i)
			body := events(
				dgEvent("5", seq, cp, 0, "FIELD_APPEND", cat(leaf("gen", i), field("a", "int", i))...),
				dgEvent("5", seq+1, cp, 1, "FIELD_APPEND", cat(leaf("gen", i), field("b", "int", i))...),
				dgEvent("5", seq+2, cp, 2, "STEP_COMPLETED", leaf("gen", i)...))
			if code := writer.do(t, "POST", "/api/v1/datagen/exp/events?checkpoint=true", body, nil); code != http.StatusCreated {
				t.Errorf("checkpoint %d: %d", i, code)
				return
			}
		}
	}()
	folds := 0
	for !done.Load() || folds == 0 {
		req := httptest.NewRequest("GET", "/api/v1/datagen/exp/items/5", nil)
		rec := httptest.NewRecorder()
		reader.e.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code)
		var item api.DatagenItemResponse
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &item))
		n := len(item.Item.Trajectory)
		require.Len(t, item.Item.Fields["a"].Values, n, "fields of exactly the completed steps")
		require.Len(t, item.Item.Fields["b"].Values, n)
		folds++
	}
	wg.Wait()
	var item api.DatagenItemResponse
	require.Equal(t, http.StatusOK, reader.do(t, "GET", "/api/v1/datagen/exp/items/5", nil, &item))
	require.Len(t, item.Item.Trajectory, steps, "every acknowledged checkpoint is visible on the other worker")
}
