package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/contexts"
)

// Context stores from the CLI: create with a dimension and metric, add, upsert, search,
// retrieve, get by external id, retire, related and delete.
func TestCLIContextStore(t *testing.T) {
	base, _ := startServe(t)
	api := "--api-url=" + base
	require.Contains(t, mustCLI(t, "store", "create", api, "--embedding-dim=2", "--distance-metric=cosine", "context/mem"), "context/mem created")
	require.Contains(t, mustCLI(t, "store", "list", api, "context"), "mem")
	var added struct{ IDs []string }
	require.NoError(t, json.Unmarshal([]byte(mustCLI(t, "context", "add", api, "mem", "--text=deploy runbook", "--vector=1,0",
		"--metadata", `{"team": "payments"}`, "--flush")), &added))
	require.Len(t, added.IDs, 1)
	mustCLI(t, "context", "upsert", api, "mem", "--text=lunch", "--vector=0,1", "--external-id=menu")
	mustCLI(t, "context", "upsert", api, "mem", "--text=dinner", "--vector=0,1", "--external-id=menu")
	_, err := cli(t, "context", "add", api, "mem", "--vector=1,2,3")
	require.Error(t, err, "a wrong dimension is refused")

	var found []contexts.SearchResult
	require.NoError(t, json.Unmarshal([]byte(mustCLI(t, "context", "search", api, "mem", "--vector=1,0.1", "--limit=1")), &found))
	require.Len(t, found, 1)
	require.Equal(t, added.IDs[0], found[0].Record.ID)
	require.NoError(t, json.Unmarshal([]byte(mustCLI(t, "context", "search", api, "mem", "--vector=0,1", "--filters", `{"team": "payments"}`)), &found))
	require.Len(t, found, 1, "filters apply before ranking")
	var got []contexts.RetrieveResult
	require.NoError(t, json.Unmarshal([]byte(mustCLI(t, "context", "retrieve", api, "mem", "--text=dinner", "--vector=0,1")), &got))
	require.Equal(t, "dinner", *got[0].Record.TextPayload)
	require.Contains(t, mustCLI(t, "context", "get", api, "mem", "-", "--external-id=menu"), `"text_payload": "dinner"`)
	require.Contains(t, mustCLI(t, "context", "retire", api, "mem", added.IDs[0]), `"updated": true`)
	require.NoError(t, json.Unmarshal([]byte(mustCLI(t, "context", "search", api, "mem", "--vector=1,0")), &found))
	require.Len(t, found, 1, "the retired record is hidden; dinner remains")
	require.Contains(t, mustCLI(t, "context", "delete", api, "mem", "-", "--external-id=menu"), `"deleted": true`)
	require.True(t, strings.HasPrefix(strings.TrimSpace(mustCLI(t, "context", "related", api, "mem", "doc://x")), "["))
}
