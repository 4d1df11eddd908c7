//go:build duckdb_arrow

package duckrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testrows"
	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "prompt", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "reward", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "step", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// newStore is a store on an in-memory object store, closed at the test's end.
func newStore(t *testing.T, mem memory.Allocator) *lsm.Store {
	t.Helper()
	s, err := lsm.Create(context.Background(), objstoretest.NewMemory(), testSchema, "id", lsm.Options{Instance: "w", Allocator: mem})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// appendRows appends n rows id-<first+i> with prompt p<i%3>, reward i and step.
func appendRows(t *testing.T, s *lsm.Store, mem memory.Allocator, first, n int, step int64) {
	t.Helper()
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("id-%06d", first+i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("p%d", (first+i)%3))
		b.Field(2).(*array.Float64Builder).Append(float64(first + i))
		b.Field(3).(*array.Int64Builder).Append(step)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := s.Append(context.Background(), rec)
	require.NoError(t, err)
}

// runQuery runs a statement and returns the result as rows of Go values (JSON-marshalable ones).
func runQuery(t *testing.T, r *Runner, s *lsm.Store, stmt string, maxRows int) ([][]any, sqlquery.Result, error) {
	t.Helper()
	var rows [][]any
	res, err := r.Run(context.Background(), s, sqlquery.Request{Statement: stmt, MaxRows: maxRows}, collect(&rows))
	return rows, res, err
}

// collect is an emit that appends the batches' rows to rows, strings copied out of the batch
// (its memory is DuckDB's, freed after emit).
func collect(rows *[][]any) func(arrow.RecordBatch) error {
	return func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			row := make([]any, rec.NumCols())
			for c := range row {
				row[c] = rec.Column(c).GetOneForMarshal(i)
				if str, ok := row[c].(string); ok {
					row[c] = strings.Clone(str)
				}
			}
			*rows = append(*rows, row)
		}
		return nil
	}
}

func newRunner(t *testing.T, l Limits) *Runner {
	t.Helper()
	l.SpillDir = t.TempDir()
	r, err := New(l, nil)
	require.NoError(t, err)
	return r
}

// A query reads the store as a scan does: the base table overridden by pending generations and
// the memtable, newest row per id, deletes applied; `t` may be read many times in one statement,
// and `records` is the same rows.
func TestQueryReadsTheStoreAsAScanDoes(t *testing.T) {
	mem := testrows.CheckedAlloc(t) // checked after the store closes (cleanups run last first)
	s := newStore(t, mem)
	ctx := context.Background()
	appendRows(t, s, mem, 0, 300, 1)
	require.NoError(t, s.Flush(ctx))
	_, err := s.MergeShard(ctx, s.Shard(), lsm.MergeOptions{})
	require.NoError(t, err)
	appendRows(t, s, mem, 250, 100, 2) // 50 updated, 50 new: a pending generation
	require.NoError(t, s.Flush(ctx))
	appendRows(t, s, mem, 340, 20, 3) // 10 updated, 10 new: the memtable
	_, err = s.Delete(ctx, []string{"id-000000", "id-000001"})
	require.NoError(t, err)

	r := newRunner(t, Limits{})
	rows, res, err := runQuery(t, r, s, "SELECT step, count(*) AS n FROM t GROUP BY step ORDER BY step", 0)
	require.NoError(t, err)
	require.Equal(t, [][]any{{int64(1), int64(248)}, {int64(2), int64(90)}, {int64(3), int64(20)}}, rows)
	require.Equal(t, int64(358), res.SnapshotRows)
	require.False(t, res.Truncated)

	rows, _, err = runQuery(t, r, s, `SELECT a.id FROM t a JOIN records b ON a.id = b.id AND a.step <> b.step`, 0)
	require.NoError(t, err)
	require.Empty(t, rows)
	rows, _, err = runQuery(t, r, s, "SELECT count(*) FROM t WHERE id IN (SELECT id FROM t WHERE reward >= 350)", 0)
	require.NoError(t, err)
	require.Equal(t, [][]any{{int64(10)}}, rows)

	// The sources of lance-context's record browser.
	for source, want := range map[lsm.Source]int64{lsm.SourceBase: 300, lsm.SourceWAL: 110} {
		var n int64
		_, err := r.Run(ctx, s, sqlquery.Request{Statement: "SELECT count(*) FROM t", Source: source}, func(rec arrow.RecordBatch) error {
			n = rec.Column(0).(*array.Int64).Value(0)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, want, n, "%v", source)
	}

	// MaxRows caps the result; an empty result still has its columns.
	rows, res, err = runQuery(t, r, s, "SELECT * FROM t ORDER BY id", 7)
	require.NoError(t, err)
	require.Len(t, rows, 7)
	require.True(t, res.Truncated)
	require.Equal(t, "id-000002", rows[0][0])
	var schema *arrow.Schema
	_, err = r.Run(ctx, s, sqlquery.Request{Statement: "SELECT id, reward FROM t WHERE false"}, func(rec arrow.RecordBatch) error {
		schema = rec.Schema()
		require.Zero(t, rec.NumRows())
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"id", "reward"}, []string{schema.Field(0).Name, schema.Field(1).Name})
}

// A query given a cut (a read token's) reads that state of the store, not the rows written since.
func TestQueryReadsACut(t *testing.T) {
	mem := testrows.CheckedAlloc(t)
	s := newStore(t, mem)
	ctx := context.Background()
	appendRows(t, s, mem, 0, 40, 1)
	require.NoError(t, s.Flush(ctx))
	cut, err := s.CurrentCut(ctx)
	require.NoError(t, err)
	appendRows(t, s, mem, 30, 40, 2) // 10 updated, 30 new
	require.NoError(t, s.Flush(ctx))
	r := newRunner(t, Limits{})
	count := func(req sqlquery.Request) [][]any {
		var rows [][]any
		_, err := r.Run(ctx, s, req, collect(&rows))
		require.NoError(t, err)
		return rows
	}
	require.Equal(t, [][]any{{int64(40), int64(1)}}, count(sqlquery.Request{Statement: "SELECT count(*), max(step) FROM t", Cut: &cut}))
	require.Equal(t, [][]any{{int64(70), int64(2)}}, count(sqlquery.Request{Statement: "SELECT count(*), max(step) FROM t"}))
}

// Only one read-only query runs: statements that write, more than one statement, and every way
// to reach a file, the network, an extension or the configuration are refused as ErrStatement.
func TestQueryRefusesAllButOneReadOnlyStatement(t *testing.T) {
	mem := memory.NewGoAllocator()
	s := newStore(t, mem)
	appendRows(t, s, mem, 0, 10, 1)
	r := newRunner(t, Limits{})
	for _, stmt := range []string{
		"DELETE FROM t",
		"SELECT 1; DROP TABLE t",
		"SELECT 1; SELECT 2",
		"WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
		"SELECT * FROM read_csv('/etc/passwd')",
		"SELECT * FROM read_text('/etc/hostname')",
		"SELECT * FROM glob('/*')",
		"SELECT * FROM read_parquet('https://example.com/x.parquet')",
		"SELECT * FROM 'x.csv'",
		"FROM sniff_csv('/etc/passwd')",
		"SELECT getenv('HOME')",
		"SELECT count(*) FROM duckdb_secrets()",
		"SELECT current_setting('enable_external_access') AND false FROM nosuchtable",
		"SELECT nosuchcolumn FROM t",
		"SELEC 1",
	} {
		_, _, err := runQuery(t, r, s, stmt, 0)
		require.ErrorIs(t, err, sqlquery.ErrStatement, stmt)
	}
	// What a query can see of its database is its own: settings read, locked.
	rows, _, err := runQuery(t, r, s, "SELECT current_setting('enable_external_access'), current_setting('lock_configuration')", 0)
	require.NoError(t, err)
	require.Equal(t, [][]any{{false, true}}, rows)
}

// A query past its time limit stops (DuckDB is interrupted) with the deadline's error; a query
// past the process's concurrency is refused at once.
func TestQueryLimits(t *testing.T) {
	mem := memory.NewGoAllocator()
	s := newStore(t, mem)
	appendRows(t, s, mem, 0, 10, 1)
	r := newRunner(t, Limits{Timeout: 300 * time.Millisecond, MaxConcurrent: 1})
	start := time.Now()
	_, _, err := runQuery(t, r, s, "SELECT count(*) FROM range(100000000000) a", 0)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, sqlquery.ErrTimeout)
	require.Less(t, time.Since(start), 5*time.Second)

	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), s, sqlquery.Request{Statement: "SELECT * FROM t"}, func(arrow.RecordBatch) error {
			close(started)
			<-release
			return nil
		})
		done <- err
	}()
	<-started
	_, _, err = runQuery(t, r, s, "SELECT 1", 0)
	require.ErrorIs(t, err, sqlquery.ErrBusy)
	close(release)
	require.NoError(t, <-done)

	// A query that needs more memory than its limit and may not spill enough fails as a query error.
	small := newRunner(t, Limits{MemoryBytes: 32 << 20, SpillBytes: 1 << 20})
	_, _, err = runQuery(t, small, s, "SELECT list(i ORDER BY -i) FROM range(50000000) r(i)", 0)
	require.Error(t, err)
	require.True(t, errors.Is(err, sqlquery.ErrStatement), "%v", err)
}
