//go:build duckdb_arrow

// Package duckrun runs SQL over a store with DuckDB (sqlquery.Runner). Each query gets a DuckDB
// database of its own, in memory, opened with the query's limits (memory, threads, a spill
// directory of its own) and with every file, network and extension access switched off and the
// configuration locked but for reading the store's own fragment files; the store's snapshot is
// loaded into it as the table `t` (load.go: its fragments read by DuckDB and the WAL's rows as
// Arrow for a store on a local disk, the whole snapshot as Arrow otherwise), and the database is
// closed when the query ends. Built with -tags duckdb_arrow (DuckDB's Arrow interface); without
// the tag the runner answers that the binary has no SQL (disabled.go).
package duckrun

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/lsm"
)

// Available reports whether this binary can run SQL.
const Available = true

// Runner runs queries with DuckDB within its limits.
type Runner struct {
	limits Limits
	// slots holds one token per running query (at most Limits.MaxConcurrent): a query that finds
	// none is ErrBusy at once rather than queued, so memory stays bounded by the slots.
	slots chan struct{}
	log   *slog.Logger
}

// New returns a runner with the limits (defaults for the zero ones).
func New(limits Limits, log *slog.Logger) (*Runner, error) {
	limits = limits.withDefaults()
	if err := os.MkdirAll(limits.SpillDir, 0o700); err != nil {
		return nil, fmt.Errorf("sql spill directory: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Runner{limits: limits, slots: make(chan struct{}, limits.MaxConcurrent), log: log}, nil
}

// maxSnapshotAttempts bounds how often a query starts its snapshot again because merges kept
// removing generations it was reading.
const maxSnapshotAttempts = 4

// errSnapshotRestarted: the snapshot scan started again after the engine had read some of it.
var errSnapshotRestarted = errors.New("the snapshot scan started again")

// Run runs one query over a snapshot of s.
func (r *Runner) Run(ctx context.Context, s *lsm.Store, req sqlquery.Request, emit func(arrow.RecordBatch) error) (sqlquery.Result, error) {
	res, err := r.run(ctx, s, req, emit)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil { // the query's own limit
		err = fmt.Errorf("%w (%s): %w", sqlquery.ErrTimeout, r.limits.Timeout, err)
	}
	return res, err
}

func (r *Runner) run(ctx context.Context, s *lsm.Store, req sqlquery.Request, emit func(arrow.RecordBatch) error) (sqlquery.Result, error) {
	if err := sqlquery.CheckStatement(req.Statement); err != nil {
		return sqlquery.Result{}, err
	}
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	default:
		return sqlquery.Result{}, sqlquery.ErrBusy
	}
	ctx, cancel := context.WithTimeout(ctx, r.limits.Timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		res, err := r.runOnce(ctx, s, req, emit)
		if !errors.Is(err, errSnapshotRestarted) || attempt == maxSnapshotAttempts {
			return res, err
		}
	}
}

// runOnce runs the query in a database of its own: the snapshot loaded (errSnapshotRestarted
// when a merge made it start again: nothing was emitted yet), then the statement.
func (r *Runner) runOnce(ctx context.Context, s *lsm.Store, req sqlquery.Request, emit func(arrow.RecordBatch) error) (sqlquery.Result, error) {
	spill, err := os.MkdirTemp(r.limits.SpillDir, "q-")
	if err != nil {
		return sqlquery.Result{}, fmt.Errorf("sql spill directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(spill) }()
	db, err := duckdb.NewConnector(r.limits.dsn(), nil)
	if err != nil {
		return sqlquery.Result{}, fmt.Errorf("opening DuckDB: %w", err)
	}
	defer func() { _ = db.Close() }()
	raw, err := db.Connect(ctx)
	if err != nil {
		return sqlquery.Result{}, fmt.Errorf("connecting to DuckDB: %w", err)
	}
	conn := raw.(*duckdb.Conn)
	defer func() { _ = conn.Close() }()
	ar, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return sqlquery.Result{}, err
	}
	q := &query{conn: conn, ar: ar, s: s, source: req.Source, cut: req.Cut}
	if err := q.exec(ctx, r.limits.spillSettings(spill)...); err != nil {
		return sqlquery.Result{}, err
	}
	columns := sqlquery.Columns(req.Statement, userColumns(s))
	var res sqlquery.Result
	if s.OnLocalDisk() && !r.limits.NoFragmentFiles && req.Cut == nil { // a cut streams as Arrow
		res, err = q.loadFiles(ctx, columns)
	} else if err = q.exec(ctx, lockSettings(nil)...); err == nil {
		res, err = q.loadArrow(ctx, columns)
	}
	if err != nil {
		return sqlquery.Result{}, queryError(ctx, err)
	}
	if err := q.exec(ctx, "CREATE VIEW "+sqlquery.RecordsView+" AS SELECT * FROM "+sqlquery.TableName); err != nil {
		return sqlquery.Result{}, queryError(ctx, err)
	}
	if err := checkSelect(conn, req.Statement); err != nil {
		return sqlquery.Result{}, err
	}
	rows, err := ar.QueryContext(ctx, req.Statement)
	if err != nil {
		return sqlquery.Result{}, queryError(ctx, err)
	}
	defer rows.Release()
	emitted := false
	for rows.Next() {
		rec := rows.RecordBatch()
		n := rec.NumRows()
		if req.MaxRows > 0 && res.Rows+n > int64(req.MaxRows) {
			res.Truncated = true
			n = int64(req.MaxRows) - res.Rows
		}
		if n > 0 || !emitted {
			part := rec.NewSlice(0, n)
			err := emit(part)
			part.Release()
			if err != nil {
				return res, err
			}
			emitted = true
			res.Rows += n
		}
		if res.Truncated {
			return res, nil
		}
	}
	if err := rows.Err(); err != nil {
		return res, queryError(ctx, err)
	}
	if !emitted {
		empty := array.NewRecordBatch(rows.Schema(), emptyColumns(rows.Schema()), 0)
		defer empty.Release()
		if err := emit(empty); err != nil {
			return res, err
		}
	}
	return res, nil
}

// checkSelect parses the statement with DuckDB (against t) and refuses anything but exactly one
// SELECT. conn.Prepare (not PrepareContext, which runs every statement but the last while it
// prepares) refuses more than one statement.
func checkSelect(conn *duckdb.Conn, statement string) error {
	st, err := conn.Prepare(statement)
	if err != nil {
		return fmt.Errorf("%w: %s", sqlquery.ErrStatement, duckMessage(err))
	}
	defer func() { _ = st.Close() }()
	kind, err := st.(*duckdb.Stmt).StatementType()
	if err != nil {
		return fmt.Errorf("%w: %s", sqlquery.ErrStatement, duckMessage(err))
	}
	if kind != duckdb.STATEMENT_TYPE_SELECT {
		return fmt.Errorf("%w: only a read-only query (SELECT or WITH … SELECT) may run", sqlquery.ErrStatement)
	}
	return nil
}

// queryError maps an error of DuckDB to the query's: the request's deadline or cancellation as
// such, anything else the engine said as ErrStatement with its message.
func queryError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var de *duckdb.Error
	if errors.As(err, &de) || strings.Contains(err.Error(), "Error:") {
		return fmt.Errorf("%w: %s", sqlquery.ErrStatement, duckMessage(err))
	}
	return err
}

// duckMessage is DuckDB's message without the driver's prefixes.
func duckMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"could not prepare query\n", "could not prepare query: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return strings.TrimSpace(msg)
}

func userColumns(s *lsm.Store) []string {
	var out []string
	for _, f := range s.Schema().Fields() {
		if !strings.HasPrefix(f.Name, "_") {
			out = append(out, f.Name)
		}
	}
	return out
}

func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func emptyColumns(schema *arrow.Schema) []arrow.Array {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(memoryPool, f.Type, 0)
	}
	return cols
}

// dsn is the DuckDB configuration of one query's database, set when it opens.
func (l Limits) dsn() string {
	v := url.Values{}
	v.Set("threads", strconv.Itoa(l.Threads))
	v.Set("memory_limit", strconv.FormatInt(l.MemoryBytes>>20, 10)+"MiB")
	v.Set("autoinstall_known_extensions", "false")
	v.Set("autoload_known_extensions", "false")
	v.Set("allow_community_extensions", "false")
	v.Set("allow_unsigned_extensions", "false")
	v.Set("preserve_insertion_order", "false")
	return "?" + v.Encode()
}

// spillSettings set where a query's database spills and how much.
func (l Limits) spillSettings(spill string) []string {
	return []string{
		"SET temp_directory = " + quoteLiteral(spill),
		"SET max_temp_directory_size = '" + strconv.FormatInt(l.SpillBytes>>20, 10) + "MiB'",
	}
}

// lockSettings finish configuring a query's database before anything of the caller's runs: no
// file or network access but to the files named (a store's fragments), and the configuration
// locked (no statement of the query can change it back).
func lockSettings(files []string) []string {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = quoteLiteral(f)
	}
	return []string{
		"SET allowed_paths = [" + strings.Join(quoted, ", ") + "]",
		"SET enable_external_access = false",
		"SET lock_configuration = true",
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

var _ driver.Conn = (*duckdb.Conn)(nil)
