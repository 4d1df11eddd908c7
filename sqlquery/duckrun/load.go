//go:build duckdb_arrow

// Loading a store's snapshot into a query's database as the table t, two ways:
//
//   - loadArrow (any store): the snapshot scan (newest row per key, in key order) streams into
//     DuckDB as Arrow and is kept as the table t;
//   - loadFiles (a store on a local disk): DuckDB reads the base table's fragments itself
//     (read_parquet over exactly those files: the only files the query may open), the rows
//     deleted from them are a table it anti-joins, and only the WAL's newest versions stream in
//     as Arrow (the table _wal, with _seq and _tombstone); t is kept from the view _files, which
//     picks the newest version of each key across the two by _seq. DuckDB reads the Parquet
//     itself (projected, in parallel, without our ordered merge by key).
//
// t is a table in both, not a view: a statement may read it many times, and a table spills past
// the memory limit where a sort over the view's anti-joins runs out of memory.
//
// Both read one snapshot (lsm's snapshot scans): a merge that removes a generation the stream
// still reads makes it errSnapshotRestarted, and the query starts again in a new database.
package duckrun

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/table"
)

// query is one query's database connection and the store it reads.
type query struct {
	conn   *duckdb.Conn
	ar     *duckdb.Arrow
	s      *lsm.Store
	source lsm.Source
	cut    *lsm.Cut // a read token's cut to read instead of the live view (always as Arrow)
}

// exec runs statements of the runner's own, in order.
func (q *query) exec(ctx context.Context, stmts ...string) error {
	for _, st := range stmts {
		if _, err := q.conn.ExecContext(ctx, st, nil); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// fieldsOf is the store's fields named by columns, in their order.
func (q *query) fieldsOf(columns []string) []arrow.Field {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		fields[i] = q.s.Schema().Field(q.s.Schema().FieldIndices(c)[0])
	}
	return fields
}

// withKey is columns with the store's key first (count(*) needs the rows, a join the key).
func (q *query) withKey(columns []string) []string {
	out := []string{q.s.KeyColumn()}
	for _, c := range columns {
		if c != q.s.KeyColumn() {
			out = append(out, c)
		}
	}
	return out
}

// loadArrow keeps the snapshot scan's rows as the table t.
func (q *query) loadArrow(ctx context.Context, columns []string) (sqlquery.Result, error) {
	if len(columns) == 0 {
		columns = []string{q.s.KeyColumn()}
	}
	var start lsm.SnapshotScanStart
	begun := false
	stream := newBatchStream(ctx, arrow.NewSchema(q.fieldsOf(columns), nil), func(ctx context.Context, emit func(arrow.RecordBatch) error) error {
		return q.s.ScanSnapshot(ctx, lsm.SnapshotScanOptions{Columns: columns, Source: q.source, Cut: q.cut}, func(st lsm.SnapshotScanStart) error {
			if begun {
				return errSnapshotRestarted // DuckDB already read some of the previous attempt
			}
			begun, start = true, st
			return nil
		}, emit)
	})
	defer stream.close()
	if err := q.copyStream(ctx, stream, "_snapshot", sqlquery.TableName, columns); err != nil {
		return sqlquery.Result{}, err
	}
	return sqlquery.Result{TableVersion: start.TableVersion, SnapshotRows: stream.rows}, nil
}

// copyStream keeps what stream holds as table (the named columns), through the view name.
func (q *query) copyStream(ctx context.Context, stream *batchStream, view, tableName string, columns []string) error {
	release, err := q.ar.RegisterView(stream, view)
	if err != nil {
		return err
	}
	defer release()
	list := make([]string, len(columns))
	for i, c := range columns {
		list[i] = quoteIdent(c)
	}
	err = q.exec(ctx, "CREATE TABLE "+tableName+" AS SELECT "+strings.Join(list, ", ")+" FROM "+view)
	if serr := stream.err(); serr != nil {
		return serr // the producer's own error says more than DuckDB's of it
	}
	return err
}

// loadFiles keeps the fragments' and the WAL's newest rows as t (see the file comment).
func (q *query) loadFiles(ctx context.Context, columns []string) (sqlquery.Result, error) {
	cols := q.withKey(columns)
	walColumns := append(append([]string(nil), cols...), table.SeqColumn, table.TombstoneColumn)
	walFields := append(q.fieldsOf(cols),
		arrow.Field{Name: table.SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: table.TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean})
	filesCh := make(chan lsm.SnapshotFiles, 1)
	begun := false
	stream := newBatchStream(ctx, arrow.NewSchema(walFields, nil), func(ctx context.Context, emit func(arrow.RecordBatch) error) error {
		return q.s.ScanSnapshotFiles(ctx, columns, q.source, func(f lsm.SnapshotFiles) error {
			if begun {
				return errSnapshotRestarted // the database already allows the first snapshot's files only
			}
			begun = true
			filesCh <- f
			return nil
		}, emit)
	})
	defer stream.close()
	var files lsm.SnapshotFiles
	select {
	case files = <-filesCh:
	case <-stream.done:
		// The scan may have ended after its begin (filesCh is filled before any batch): the
		// files are then waiting.
		select {
		case files = <-filesCh:
		default:
			if err := stream.err(); err != nil {
				return sqlquery.Result{}, err
			}
			return sqlquery.Result{}, fmt.Errorf("the snapshot scan ended without its files: %w", context.Cause(ctx))
		}
	}
	paths := make([]string, len(files.Fragments))
	for i, f := range files.Fragments {
		paths[i] = f.Path
	}
	if err := q.exec(ctx, lockSettings(paths)...); err != nil {
		return sqlquery.Result{}, err
	}
	if err := q.copyStream(ctx, stream, "_walstream", "_wal", walColumns); err != nil {
		return sqlquery.Result{}, err
	}
	if err := q.loadDeleted(ctx, files.Fragments); err != nil {
		return sqlquery.Result{}, err
	}
	deletions := false
	for _, f := range files.Fragments {
		deletions = deletions || len(f.Deleted) > 0
	}
	base, err := q.baseView(ctx, paths, cols, deletions)
	if err != nil {
		return sqlquery.Result{}, err
	}
	key := quoteIdent(q.s.KeyColumn())
	seq, tomb := quoteIdent(table.SeqColumn), quoteIdent(table.TombstoneColumn)
	list := make([]string, len(cols))
	for i, c := range cols {
		list[i] = quoteIdent(c)
	}
	if len(columns) == 0 {
		list = list[:1]
	}
	// Newest version per key. When every WAL version is newer than the whole base table (the
	// usual case), a WAL version replaces its key's base row and is never replaced by it: one
	// anti-join on the key, and the base table is read once.
	newest := "SELECT * FROM " + base + " b WHERE NOT b." + tomb + " AND NOT EXISTS (SELECT 1 FROM _wal w WHERE w." + key + " = b." + key + " AND w." + seq + " > b." + seq + ")" +
		" UNION ALL BY NAME " +
		"SELECT * FROM _wal w WHERE NOT w." + tomb + " AND NOT EXISTS (SELECT 1 FROM " + base + " b WHERE b." + key + " = w." + key + " AND b." + seq + " > w." + seq + ")"
	switch {
	case files.WALVersions == 0:
		newest = "SELECT * FROM " + base + " b WHERE NOT b." + tomb
	case files.WALMinSeq > files.BaseMaxSeq:
		newest = "SELECT b.* FROM " + base + " b ANTI JOIN _wal w ON b." + key + " = w." + key + " WHERE NOT b." + tomb +
			" UNION ALL BY NAME SELECT * FROM _wal w WHERE NOT w." + tomb
	}
	err = q.exec(ctx, "CREATE TABLE "+sqlquery.TableName+" AS SELECT "+strings.Join(list, ", ")+" FROM ("+newest+")")
	if err != nil {
		return sqlquery.Result{}, err
	}
	var live int64
	for _, f := range files.Fragments {
		live += f.Rows - int64(len(f.Deleted))
	}
	return sqlquery.Result{TableVersion: files.TableVersion, SnapshotRows: live + stream.rows}, nil
}

// loadDeleted keeps the fragments' deleted rows as the table _deleted (file, row).
func (q *query) loadDeleted(ctx context.Context, frags []lsm.FragmentFile) error {
	schema := arrow.NewSchema([]arrow.Field{{Name: "file", Type: arrow.BinaryTypes.String}, {Name: "row", Type: arrow.PrimitiveTypes.Int64}}, nil)
	stream := newBatchStream(ctx, schema, func(ctx context.Context, emit func(arrow.RecordBatch) error) error {
		b := array.NewRecordBuilder(memoryPool, schema)
		defer b.Release()
		flush := func() error {
			rec := b.NewRecordBatch()
			defer rec.Release()
			return emit(rec)
		}
		n := 0
		for _, f := range frags {
			for _, row := range f.Deleted {
				b.Field(0).(*array.StringBuilder).Append(f.Path)
				b.Field(1).(*array.Int64Builder).Append(int64(row))
				if n++; n%65536 == 0 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		return flush()
	})
	defer stream.close()
	return q.copyStream(ctx, stream, "_deletedstream", "_deleted", []string{"file", "row"})
}

// baseView creates the view _base: the fragments' live rows (deleted ones, when any, anti-joined away),
// the named columns the files hold, _seq and _tombstone (false where the files have none). With
// no fragment it is an empty relation of _wal's columns. It returns the view's name.
func (q *query) baseView(ctx context.Context, paths, cols []string, deletions bool) (string, error) {
	if len(paths) == 0 {
		return "_base", q.exec(ctx, "CREATE VIEW _base AS SELECT * FROM _wal WHERE false")
	}
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = quoteLiteral(p)
	}
	files := "read_parquet([" + strings.Join(quoted, ", ") + "], union_by_name = true, filename = true, file_row_number = true)"
	if !deletions {
		files = "read_parquet([" + strings.Join(quoted, ", ") + "], union_by_name = true)"
	}
	has, err := q.columnsOf(ctx, files)
	if err != nil {
		return "", err
	}
	var list []string
	for _, c := range append(append([]string(nil), cols...), table.SeqColumn) {
		if has[c] {
			list = append(list, "b."+quoteIdent(c))
		}
	}
	tomb := "false AS " + quoteIdent(table.TombstoneColumn)
	if has[table.TombstoneColumn] {
		tomb = "coalesce(b." + quoteIdent(table.TombstoneColumn) + ", false) AS " + quoteIdent(table.TombstoneColumn)
	}
	view := "CREATE VIEW _base AS SELECT " + strings.Join(list, ", ") + ", " + tomb + " FROM " + files + " b"
	if deletions {
		view += " ANTI JOIN _deleted d ON b.filename = d.file AND b.file_row_number = d.row"
	}
	return "_base", q.exec(ctx, view)
}

// columnsOf is the set of columns the files hold (their union).
func (q *query) columnsOf(ctx context.Context, files string) (map[string]bool, error) {
	rows, err := q.conn.QueryContext(ctx, "SELECT column_name FROM (DESCRIBE SELECT * FROM "+files+")", nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	has := map[string]bool{}
	dest := make([]driver.Value, 1)
	for {
		if err := rows.Next(dest); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if name, ok := dest[0].(string); ok {
			has[name] = true
		}
	}
	return has, nil
}
