package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/sqlquery/duckrun"
)

// `strata sql` (and the Go client's Query, QueryTo and GetRows under it) against a real server.
func TestSQLCommandAndClient(t *testing.T) {
	if !duckrun.Available {
		t.Skip("built without -tags duckdb_arrow: no SQL")
	}
	base, _ := startServe(t)
	api := "--api-url=" + base
	dir := t.TempDir()
	mustCLI(t, "store", "create", api, "rollout/q")
	var jsonl strings.Builder
	for i := range 30 {
		fmt.Fprintf(&jsonl, `{"id": "r%02d", "rollout_id": "t%d", "content": "c %d"}`+"\n", i, i%3, i)
	}
	rows := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(rows, []byte(jsonl.String()), 0o644))
	mustCLI(t, "append", api, "rollout/q", rows)

	table := strings.Split(strings.TrimSpace(mustCLI(t, "sql", api, "rollout/q", "SELECT rollout_id, count(*) AS n FROM t GROUP BY 1 ORDER BY 1")), "\n")
	require.Equal(t, []string{"rollout_id", "n"}, strings.Fields(table[0]))
	require.Equal(t, []string{"t0", "10"}, strings.Fields(table[1]))
	require.Equal(t, "(3 rows)", table[len(table)-1])

	var res client.QueryResult
	require.NoError(t, json.Unmarshal([]byte(mustCLI(t, "sql", api, "--format=json", "--limit=2", "rollout/q", "SELECT id FROM t ORDER BY id")), &res))
	require.Equal(t, [][]any{{"r00"}, {"r01"}}, res.Rows)
	require.True(t, res.Truncated)
	require.Contains(t, mustCLI(t, "sql", api, "--format=csv", "rollout/q", "SELECT id FROM t WHERE id = 'r07'"), "id\nr07\n")
	out := filepath.Join(dir, "q.parquet")
	mustCLI(t, "sql", api, "--format=parquet", "--output="+out, "rollout/q", "SELECT * FROM t")
	require.EqualValues(t, 30, parquetRows(t, out))
	_, err := cli(t, "sql", api, "rollout/q", "DROP TABLE t")
	require.ErrorContains(t, err, "INVALID_SQL")

	c, err := client.New(base)
	require.NoError(t, err)
	got, err := c.GetRows(context.Background(), client.KindRollout, "q", []string{"r05", "nope", "r01"}, []string{"content"})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Contains(t, string(got[0]), `"c 5"`)
}
