package contextmcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/contextmcp"
	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storecache"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

// apiServer is a real Strata API worker with one context store, "mem" (2 dimensions, cosine).
func apiServer(t *testing.T) *client.Client {
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	mgr, err := storecache.New(cat, storecache.Config{DataURL: t.TempDir(), Store: lsm.Options{Instance: "w"}}, reg, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	srv := httptest.NewServer(api.New(api.Deps{Log: log, Catalog: cat, Stores: mgr, Registry: reg, Version: "test"}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	require.NoError(t, err)
	_, _, err = c.CreateStore(context.Background(), client.KindContext, "mem", client.CreateOptions{EmbeddingDim: 2, DistanceMetric: "cosine"})
	require.NoError(t, err)
	return c
}

func call[T any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) T {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %v", tool, res.Content)
	data, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(data, &out), string(data))
	return out
}

// exercise drives every tool through an SDK client session.
func exercise(t *testing.T, cs *mcp.ClientSession) {
	ctx := context.Background()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	require.ElementsMatch(t, []string{"context_add", "context_update", "context_search", "context_retrieve", "context_get", "context_relate", "context_retire"}, names)

	first := call[contextmcp.AddOutput](t, cs, "context_add", map[string]any{"text": "the deploy runbook lives in the wiki", "embedding": []float32{1, 0},
		"metadata": map[string]any{"topic": "deploy"}, "external_id": "runbook"})
	require.NotEmpty(t, first.ID)
	second := call[contextmcp.AddOutput](t, cs, "context_add", map[string]any{"store": "mem", "text": "lunch is at noon", "embedding": []float32{0, 1}})

	found := call[contexts.SearchResponse](t, cs, "context_search", map[string]any{"vector": []float32{0.9, 0.1}, "limit": 1})
	require.Len(t, found.Results, 1)
	require.Equal(t, first.ID, found.Results[0].Record.ID)
	got := call[contexts.RetrieveResponse](t, cs, "context_retrieve", map[string]any{"text": "where is the runbook"})
	require.Equal(t, first.ID, got.Results[0].Record.ID)
	rec := call[contexts.RecordResponse](t, cs, "context_get", map[string]any{"external_id": "runbook"})
	require.Equal(t, first.ID, rec.Record.ID)

	related := call[contexts.UpdateResponse](t, cs, "context_relate", map[string]any{"id": second.ID, "target_id": first.ID, "relation": "follows"})
	require.True(t, related.Updated)
	require.Equal(t, first.ID, related.Record.Relationships[0].TargetID)
	upd := call[contexts.UpdateResponse](t, cs, "context_update", map[string]any{"external_id": "runbook", "metadata": map[string]any{"topic": "ops"}})
	require.True(t, upd.Updated)
	retired := call[contexts.UpdateResponse](t, cs, "context_retire", map[string]any{"external_id": "runbook", "reason": "moved"})
	require.True(t, retired.Updated)
	found = call[contexts.SearchResponse](t, cs, "context_search", map[string]any{"vector": []float32{1, 0}})
	require.Len(t, found.Results, 1, "the retired runbook is hidden")
	require.Equal(t, related.Record.ID, found.Results[0].Record.ID)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "context_search", Arguments: map[string]any{"vector": []float32{1, 0, 0}}})
	require.NoError(t, err)
	require.True(t, res.IsError, "a wrong dimension is the tool's error")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "context_get", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.IsError, "a get names its record")
}

func TestToolsOverInMemoryTransport(t *testing.T) {
	srv := contextmcp.New(apiServer(t), contextmcp.Options{Store: "mem", Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	exercise(t, cs)
}

func TestToolsOverStreamableHTTP(t *testing.T) {
	srv := contextmcp.New(apiServer(t), contextmcp.Options{Store: "mem", Version: "test"})
	h := httptest.NewServer(contextmcp.HTTPHandler(srv))
	defer h.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: h.URL, MaxRetries: -1}, nil)
	require.NoError(t, err)
	defer cs.Close()
	exercise(t, cs)
}
