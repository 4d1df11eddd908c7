package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/contextmcp"
	"github.com/strata-store/strata/contexts"
)

// `strata mcp` as an agent starts it: a child process speaking MCP on stdio, driven by the SDK's
// client, its tools working on a real server's context store.
func TestMCPOverStdio(t *testing.T) {
	base, _ := startServe(t)
	mustCLI(t, "store", "create", "--api-url="+base, "--embedding-dim=2", "context/agent")
	ctx := context.Background()
	cmd := exec.Command(buildStrata(t), "mcp", "--api-url="+base, "--store=agent")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "context_add", Arguments: map[string]any{"text": "remember the milk", "embedding": []float32{1, 0}}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	var added contextmcp.AddOutput
	data, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(data, &added))
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "context_retrieve", Arguments: map[string]any{"text": "milk"}})
	require.NoError(t, err)
	var got contexts.RetrieveResponse
	data, _ = json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(data, &got))
	require.Len(t, got.Results, 1)
	require.Equal(t, added.ID, got.Results[0].Record.ID)
}
