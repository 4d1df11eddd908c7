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

// The README's `bin/strata sql` recipes run as written (against a server holding its tour's
// store; files the recipes write under /tmp go to a directory of the test's own).
func TestTheReadmesSQLRecipesWorkAsWritten(t *testing.T) {
	if !duckrun.Available {
		t.Skip("built without -tags duckdb_arrow: no SQL")
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var recipes [][]string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "bin/strata sql ") {
			if i := strings.Index(line, "  #"); i > 0 {
				line = line[:i]
			}
			recipes = append(recipes, shellWords(t, strings.TrimPrefix(line, "bin/strata ")))
		}
	}
	require.GreaterOrEqual(t, len(recipes), 3, "the README shows strata sql")
	base, _ := startServe(t)
	dir := t.TempDir()
	mustCLI(t, "store", "create", "--api-url="+base, "rollout/tour")
	var jsonl strings.Builder
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&jsonl, `{"id":"r%d","rollout_id":"t%d","content":"step %d"}`+"\n", i, i%7, i)
	}
	rows := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(rows, []byte(jsonl.String()), 0o644))
	mustCLI(t, "append", "--api-url="+base, "rollout/tour", rows)
	for _, args := range recipes {
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "/tmp/", dir+"/")
		}
		out := mustCLI(t, append([]string{args[0], "--api-url=" + base}, args[1:]...)...)
		require.NotEmpty(t, out+readFileIfAny(args), "strata %v printed or wrote something", args)
	}
}

// shellWords splits a command line as the shell would for the README's recipes: words, and
// double- or single-quoted strings.
func shellWords(t *testing.T, line string) []string {
	var out []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	require.Zero(t, quote, "unterminated quote in %q", line)
	if in {
		out = append(out, cur.String())
	}
	return out
}

// readFileIfAny is the content of the --output file a recipe names, if any.
func readFileIfAny(args []string) string {
	for i, a := range args {
		if a == "--output" && i+1 < len(args) {
			data, _ := os.ReadFile(args[i+1])
			return string(data)
		}
	}
	return ""
}

// `strata tail` and `strata snapshot`, and the README's recipes of them as written.
func TestTailAndSnapshotCommands(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var recipes [][]string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "bin/strata tail ") || strings.HasPrefix(line, "bin/strata snapshot ") {
			if i := strings.Index(line, "  #"); i > 0 {
				line = line[:i]
			}
			recipes = append(recipes, shellWords(t, strings.TrimPrefix(line, "bin/strata ")))
		}
	}
	require.GreaterOrEqual(t, len(recipes), 3, "the README shows strata tail and strata snapshot")
	base, _ := startServe(t)
	api := "--api-url=" + base
	dir := t.TempDir()
	mustCLI(t, "store", "create", api, "rollout/tour")
	var jsonl strings.Builder
	for i := range 6 {
		fmt.Fprintf(&jsonl, `{"id": "r%02d", "rollout_id": "t%d", "content": "c %d"}`+"\n", i, i%2, i)
	}
	rows := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(rows, []byte(jsonl.String()), 0o644))
	mustCLI(t, "append", api, "rollout/tour", rows)
	c, err := client.New(base)
	require.NoError(t, err)
	require.NoError(t, c.Flush(context.Background(), client.KindRollout, "tour"))
	for _, r := range recipes {
		out := mustCLI(t, append(r, api)...)
		switch {
		case r[0] == "tail":
			require.Equal(t, 6, strings.Count(out, `"_op":"upsert"`), out)
		case r[1] == "create":
			var snap client.Snapshot
			require.NoError(t, json.Unmarshal([]byte(out), &snap))
			require.Len(t, snap.Stores, 1)
			require.Contains(t, mustCLI(t, "snapshot", "list", api), snap.ID)
			mustCLI(t, "snapshot", "delete", api, snap.ID)
			require.NotContains(t, mustCLI(t, "snapshot", "list", api), snap.ID)
		}
	}
	// A consumer's second read starts after what the first committed.
	out := mustCLI(t, "tail", api, "rollout/tour", "--consumer=c2", "--start=earliest", "--follow=false")
	require.Equal(t, 6, strings.Count(out, "\n"))
	require.Empty(t, mustCLI(t, "tail", api, "rollout/tour", "--consumer=c2", "--follow=false"))
}
