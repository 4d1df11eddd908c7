package sqlquery

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckStatementAcceptsQueriesOnly(t *testing.T) {
	for _, ok := range []string{
		"SELECT 1", "  select * from t", "WITH x AS (SELECT 1) SELECT * FROM x", "FROM t SELECT id",
		"(SELECT 1) UNION (SELECT 2)", "-- a comment\nSELECT 1", "/* c */ VALUES (1)", "TABLE t",
	} {
		require.NoError(t, CheckStatement(ok), ok)
	}
	for _, bad := range []string{
		"", "   ", "-- only a comment", "DELETE FROM t", "INSERT INTO t VALUES (1)", "COPY t TO '/tmp/x'",
		"ATTACH 'x.db'", "INSTALL httpfs", "LOAD httpfs", "SET threads=8", "PRAGMA version", "CALL f()",
		"CREATE TABLE x AS SELECT 1", "DROP TABLE t", "EXPORT DATABASE '/tmp'", "\xff", strings.Repeat("x", MaxStatementBytes+1),
	} {
		require.ErrorIs(t, CheckStatement(bad), ErrStatement, "%q", bad)
	}
}

func TestColumnsAreTheOnesTheStatementNames(t *testing.T) {
	cols := []string{"id", "reward", "Prompt", "my col", "text"}
	for stmt, want := range map[string][]string{
		"SELECT count(*) FROM t":                            nil,
		"SELECT avg(reward) FROM t WHERE id > 'a'":          {"id", "reward"},
		"SELECT PROMPT FROM t":                              {"Prompt"},
		`SELECT "my col" FROM t`:                            {"my col"},
		"SELECT 'reward' FROM t -- text":                    nil,
		"SELECT * FROM t":                                   cols,
		"SELECT t.* FROM t":                                 cols,
		"SELECT COLUMNS('re.*') FROM t":                     cols,
		"SELECT t FROM t":                                   cols,
		"SELECT to_json(r) FROM t AS r":                     cols,
		"SELECT r.id FROM t r":                              {"id"},
		"SELECT records.reward FROM records WHERE id = 'x'": {"id", "reward"},
	} {
		require.Equal(t, want, Columns(stmt, cols), stmt)
	}
}

func FuzzColumnsAndCheckStatement(f *testing.F) {
	for _, s := range []string{"SELECT * FROM t", `SELECT "a""b" FROM t`, "/* x", "'unterminated", "-- x"} {
		f.Add(s)
	}
	cols := []string{"id", "a\"b", "x"}
	f.Fuzz(func(t *testing.T, s string) {
		_ = CheckStatement(s)
		got := Columns(s, cols)
		require.LessOrEqual(t, len(got), len(cols))
	})
}
