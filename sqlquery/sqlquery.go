// Package sqlquery is the contract of SQL over a store: one read-only statement run over a
// consistent snapshot of the store (the table `t`, also named `records` as lance-context names
// it), its limits and its errors. The HTTP API runs queries through a Runner; package
// sqlquery/duckrun implements it with DuckDB, and only the binaries that serve queries link it
// (the API package does not).
//
// This package also holds the checks made before a query reads anything: that the statement is
// a query (CheckStatement) and which of the store's columns it can name (Columns), so that a
// snapshot hands the engine only those.
package sqlquery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/lsm"
)

// TableName is the name the store has in a query; lance-context's name for it, RecordsView, is a
// view of the same rows.
const (
	TableName   = "t"
	RecordsView = "records"
)

// MaxStatementBytes is the longest statement accepted.
const MaxStatementBytes = 64 << 10

// Request is one query.
type Request struct {
	Statement string     // one SELECT (or WITH … SELECT) statement
	Source    lsm.Source // the rows `t` holds: the base table, the WAL, or both (the default)
	MaxRows   int        // the most result rows emitted; more set Result.Truncated (0: no cap)
	Cut       *lsm.Cut   // when set, `t` is this cut of the store (a read token's) instead of its live view
}

// Result describes a query that ran.
type Result struct {
	Rows         int64  // result rows emitted
	Truncated    bool   // the result had more than Request.MaxRows rows
	TableVersion uint64 // the base-table version of the snapshot the query read
	SnapshotRows int64  // rows of the snapshot (the rows of `t`)
}

// Runner runs queries. Run emits the result's batches in order (owned by the runner: emit
// retains what it keeps); the first batch's schema is the result's, and a result without rows
// still emits one empty batch, so its columns are known.
type Runner interface {
	Run(ctx context.Context, s *lsm.Store, req Request, emit func(arrow.RecordBatch) error) (Result, error)
}

var (
	// ErrStatement: the statement is not one read-only query, or the engine refused it (a syntax
	// or binding error, a function it may not call, its memory limit); the message says why.
	ErrStatement = errors.New("sql")
	// ErrBusy: as many queries as the process allows are running; retry later.
	ErrBusy = errors.New("sql: too many queries are running")
	// ErrTimeout: the query ran past its time limit and was stopped.
	ErrTimeout = errors.New("sql: the query ran past its time limit")
	// ErrUnavailable: this server cannot run SQL (a binary built without the engine).
	ErrUnavailable = errors.New("sql: unavailable")
)

// CheckStatement rejects, before anything is read, what cannot be one read-only query: an empty
// or oversized statement, invalid UTF-8, or a statement that does not start with SELECT, WITH,
// FROM (DuckDB's FROM-first form), VALUES, TABLE or a parenthesis. The engine checks again, on
// the parsed statement, that it is exactly one SELECT.
func CheckStatement(statement string) error {
	if len(statement) > MaxStatementBytes {
		return fmt.Errorf("%w: the statement is %d bytes; at most %d", ErrStatement, len(statement), MaxStatementBytes)
	}
	if !utf8.ValidString(statement) {
		return fmt.Errorf("%w: the statement is not valid UTF-8", ErrStatement)
	}
	toks := tokens(statement)
	i := 0
	for i < len(toks) && toks[i].text == "(" {
		i++
	}
	if i == len(toks) {
		return fmt.Errorf("%w: the statement is empty", ErrStatement)
	}
	switch strings.ToUpper(toks[i].text) {
	case "SELECT", "WITH", "FROM", "VALUES", "TABLE":
		return nil
	}
	return fmt.Errorf("%w: only a read-only query (SELECT or WITH … SELECT) may run, not %s", ErrStatement, strings.ToUpper(toks[i].text))
}

// Columns is the subset of columns (in their order) the statement may name: those spelled as an
// identifier in it (case-insensitively, quoted or not), or all of them when it selects a star
// (`*`, `t.*`, other than count(*)) or a COLUMNS(…) expression. A column never spelled cannot be
// part of the result or of any expression, so the snapshot need not carry it. Linear in the
// statement.
func Columns(statement string, columns []string) []string {
	named := map[string]bool{}
	toks := tokens(statement)
	if wholeRowReference(toks) {
		return columns
	}
	for i, tk := range toks {
		switch {
		case tk.text == "*":
			countStar := i > 0 && toks[i-1].text == "(" && i+1 < len(toks) && toks[i+1].text == ")"
			if !countStar {
				return columns
			}
		case tk.quoted:
			named[strings.ToLower(tk.text)] = true
		case strings.EqualFold(tk.text, "COLUMNS") && i+1 < len(toks) && toks[i+1].text == "(":
			return columns
		default:
			named[strings.ToLower(tk.text)] = true
		}
	}
	var out []string
	for _, c := range columns {
		if named[strings.ToLower(c)] {
			out = append(out, c)
		}
	}
	return out
}

// wholeRowReference reports whether the statement uses the table (or an alias of it) as a value
// — `SELECT t FROM t`, `to_json(r)` — which is a row of all its columns: a name of the table or
// of an alias given to it in FROM/JOIN, other than where a table is named or before a ".".
func wholeRowReference(toks []token) bool {
	rows := map[string]bool{TableName: true, RecordsView: true}
	defs := map[int]bool{} // where an alias is given
	isKeyword := func(i int, words ...string) bool {
		if i < 0 || i >= len(toks) || toks[i].quoted {
			return false
		}
		for _, w := range words {
			if strings.EqualFold(toks[i].text, w) {
				return true
			}
		}
		return false
	}
	for i, tk := range toks {
		if rows[strings.ToLower(tk.text)] && isKeyword(i-1, "FROM", "JOIN", ",") {
			// FROM t [AS] alias: the alias names the row too.
			j := i + 1
			if isKeyword(j, "AS") {
				j++
			}
			if j < len(toks) && !isKeyword(j, "WHERE", "GROUP", "ORDER", "LIMIT", "JOIN", "ON", "USING", "LEFT", "RIGHT",
				"INNER", "FULL", "CROSS", "NATURAL", "UNION", "EXCEPT", "INTERSECT", "HAVING", "WINDOW", "QUALIFY",
				"POSITIONAL", "ASOF", "SEMI", "ANTI", "SAMPLE", "TABLESAMPLE", "USING") && isIdentifier(toks[j]) {
				rows[strings.ToLower(toks[j].text)] = true
				defs[j] = true
			}
		}
	}
	for i, tk := range toks {
		if !isIdentifier(tk) || !rows[strings.ToLower(tk.text)] {
			continue
		}
		if defs[i] || isKeyword(i-1, "FROM", "JOIN", ",", "AS") || (i+1 < len(toks) && toks[i+1].text == ".") {
			continue
		}
		return true
	}
	return false
}

// isIdentifier reports whether the token is a word or a quoted identifier (not punctuation).
func isIdentifier(tk token) bool {
	if tk.quoted {
		return true
	}
	r, _ := utf8.DecodeRuneInString(tk.text)
	return r == '_' || unicode.IsLetter(r)
}

// token is a word, a quoted identifier (its text unquoted) or a punctuation character of a
// statement; string literals and comments are skipped.
type token struct {
	text   string
	quoted bool
}

// tokens splits a statement into tokens, in one pass.
func tokens(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case strings.HasPrefix(s[i:], "--"):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				return out
			}
			i += end + 1
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += 2 + end + 2
		case r == '\'':
			i = skipQuoted(s, i, '\'')
		case r == '"':
			var b strings.Builder
			j := i + 1
			for j < len(s) {
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					j++
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, token{text: b.String(), quoted: true})
			i = j
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			for j < len(s) {
				r2, n := utf8.DecodeRuneInString(s[j:])
				if r2 != '_' && r2 != '$' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
					break
				}
				j += n
			}
			out = append(out, token{text: s[i:j]})
			i = j
		default:
			out = append(out, token{text: s[i : i+size]})
			i += size
		}
	}
	return out
}

// skipQuoted returns the index after the literal quoted by q that starts at i (a doubled quote
// inside it is one character).
func skipQuoted(s string, i int, q byte) int {
	j := i + 1
	for j < len(s) {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return j
}
