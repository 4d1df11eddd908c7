package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/datagen"
)

func dgEventLine(t *testing.T, item string, seq int64, cp, typ string, extra string) string {
	line := fmt.Sprintf(`{"event_id": %q, "item_id": %q, "root_item_id": %q, "item_seq": %d, "checkpoint_id": %q, "event_type": %q, "run_id": "r1", "writer_epoch": "w1", "schema_version": 2%s}`,
		datagen.EventID(item, cp, 0), item, item, seq, cp, typ, extra)
	require.True(t, json.Valid([]byte(line)), line)
	return line + "\n"
}

// Datagen stores from the CLI: events imported from JSONL and Parquet, the read lenses printed,
// the store in `strata status`.
func TestCLIDatagenImportAndLenses(t *testing.T) {
	base, db := startServe(t)
	api := "--api-url=" + base
	dir := t.TempDir()
	require.Contains(t, mustCLI(t, "store", "create", api, "datagen/dg"), "datagen/dg created")

	step := `, "step_name": "gen", "step_kind": "leaf", "step_index": 0`
	jsonl := dgEventLine(t, "1", 0, "created", "ITEM_CREATED", "") +
		dgEventLine(t, "1", 1, "gen-0", "STEP_COMPLETED", step) +
		dgEventLine(t, "1", 2, "fail", "FAILED", step+`, "error_type": "Timeout"`) +
		dgEventLine(t, "2", 0, "created", "ITEM_CREATED", "") +
		dgEventLine(t, "2", 1, "end", "TERMINAL", `, "status": "completed"`)
	path := filepath.Join(dir, "events.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(jsonl), 0o644))
	mustCLI(t, "append", api, "--batch-rows=2", "datagen/dg", path)

	// A Parquet file of the log's columns (as a DuckDB export of a datagen store has them).
	var evs []datagen.Event
	require.NoError(t, json.Unmarshal([]byte("["+strings.ReplaceAll(strings.TrimSpace(
		dgEventLine(t, "3", 0, "created", "ITEM_CREATED", "")+dgEventLine(t, "3", 1, "end", "TERMINAL", `, "status": "filtered"`)), "\n", ",")+"]"), &evs))
	rec := datagen.ToRecord(evs, time.Now(), memory.DefaultAllocator)
	pq := filepath.Join(dir, "events.parquet")
	f, err := os.Create(pq)
	require.NoError(t, err)
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, nil, pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	rec.Release()
	mustCLI(t, "append", api, "datagen/dg", pq)

	item := mustCLI(t, "datagen", "item", api, "dg", "1")
	require.Contains(t, item, `"status": "running"`)
	require.Contains(t, item, `"step_name": "gen"`)
	require.Contains(t, mustCLI(t, "datagen", "failures", api, "dg", "1"), `"error_type": "Timeout"`)
	require.Equal(t, 3, strings.Count(mustCLI(t, "datagen", "events", api, "dg", "1"), `"event_id"`))
	var o datagen.Overview
	require.NoError(t, json.Unmarshal([]byte(mustCLI(t, "datagen", "overview", api, "dg")), &o))
	require.Equal(t, datagen.Overview{Items: 3, Running: 1, Completed: 1, Filtered: 1, Failures: 1,
		FailuresByErrorType: map[string]int{"Timeout": 1}, CompletedSteps: map[string]int{"gen": 1},
		FailuresByRun: map[string]*datagen.FailureBucket{"r1": {Failures: 1, FailuresByErrorType: map[string]int{"Timeout": 1}, SampleRootItemIDs: []string{"1"}}}}, o)
	require.JSONEq(t, `{"1": "running", "2": "completed", "3": "filtered"}`, mustCLI(t, "datagen", "roots", api, "dg", "1,2,3,4"))
	require.Contains(t, mustCLI(t, "datagen", "item", api, "dg", "4"), "null")
	require.Contains(t, mustCLI(t, "status", "--database-url="+db), "datagen/dg")
	require.Contains(t, mustCLI(t, "status", api, "--kind", "datagen"), "datagen/dg", "status through the API's admin route")
	require.NotContains(t, mustCLI(t, "status", api, "--kind", "rollout"), "datagen/dg")
}
