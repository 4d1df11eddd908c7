package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `strata tenant quota` and `strata status --by-tenant`, and the README's recipes of them as
// written; an append past a quota fails with the server's 429 and writes nothing.
func TestTenantCommands(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var recipes [][]string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "bin/strata tenant ") || strings.HasPrefix(line, "bin/strata status --by-tenant") {
			recipes = append(recipes, shellWords(t, strings.TrimPrefix(line, "bin/strata ")))
		}
	}
	require.Len(t, recipes, 4, "the README shows set, list, status --by-tenant and delete")
	base, _ := startServe(t)
	api := "--api-url=" + base
	mustCLI(t, "store", "create", api, "rollout/team-a.exp")
	mustCLI(t, "store", "create", api, "rollout/team-b.exp")
	for _, r := range recipes {
		out := mustCLI(t, append(r, api)...)
		switch {
		case r[0] == "status":
			require.Contains(t, out, "TENANT")
			require.Regexp(t, `team-a\s+1\s+0/100000000\s`, out)
			require.Regexp(t, `team-b\s+1\s+0\s`, out)
		case r[2] == "set", r[2] == "list":
			require.Regexp(t, `team-a\s+100000000\s+0\s+50000\s+0\s+2`, out)
		case r[2] == "delete":
			require.Contains(t, out, "removed")
			require.Contains(t, mustCLI(t, "tenant", "quota", "list", api), "(no quotas)")
		}
	}

	mustCLI(t, "tenant", "quota", "set", api, "team-a", "--max-rows", "3")
	dir := t.TempDir()
	rows := filepath.Join(dir, "rows.jsonl")
	var jsonl strings.Builder
	for i := range 5 {
		fmt.Fprintf(&jsonl, `{"id": "r%d", "rollout_id": "t"}`+"\n", i)
	}
	require.NoError(t, os.WriteFile(rows, []byte(jsonl.String()), 0o644))
	_, err = cli(t, "append", api, "rollout/team-a.exp", rows)
	require.Error(t, err)
	require.Contains(t, err.Error(), "QUOTA_EXCEEDED")
	out := mustCLI(t, "status", api, "--by-tenant")
	require.Regexp(t, `team-a\s+1\s+0/3\s`, out, "nothing was written")
	mustCLI(t, "append", api, "rollout/team-b.exp", rows)
	_, err = cli(t, "tenant", "quota", "set", api, "../x")
	require.Error(t, err)
	_, err = cli(t, "tenant", "quota", "set", api, "team-a", "--weight", "5000")
	require.Error(t, err)
}
