// Package fakesql is a test double of the SQL runner (sqlquery.Runner) for tests of the HTTP
// layer and the UI that should not link DuckDB: it answers a statement with the store's rows
// (the columns it names, read with a snapshot scan, as the real runner's Arrow path does), or
// with the error a rule gives. The real runner is tested in sqlquery/duckrun and end to end in
// cmd/strata.
package fakesql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/lsm"
)

// Runner answers "SELECT <columns> FROM t" with the store's rows (all columns for "*"); what the
// statement checks refuse is ErrStatement, a statement holding a key of Refuse gets its error.
type Runner struct {
	Refuse map[string]error // a word of a statement -> the error answered
}

// Run implements sqlquery.Runner.
func (r *Runner) Run(ctx context.Context, s *lsm.Store, req sqlquery.Request, emit func(arrow.RecordBatch) error) (sqlquery.Result, error) {
	if err := sqlquery.CheckStatement(req.Statement); err != nil {
		return sqlquery.Result{}, err
	}
	words := strings.Fields(req.Statement)
	for _, w := range words {
		if err, ok := r.Refuse[w]; ok {
			return sqlquery.Result{}, err
		}
	}
	if len(words) < 4 || !strings.EqualFold(words[0], "SELECT") || !strings.EqualFold(words[len(words)-2], "FROM") {
		return sqlquery.Result{}, fmt.Errorf("%w: the test runner answers SELECT <columns> FROM t only", sqlquery.ErrStatement)
	}
	var columns []string
	if cols := strings.Join(words[1:len(words)-2], " "); cols != "*" {
		for _, c := range strings.Split(cols, ",") {
			columns = append(columns, strings.TrimSpace(c))
		}
	}
	var res sqlquery.Result
	err := s.ScanSnapshot(ctx, lsm.SnapshotScanOptions{Columns: columns, Source: req.Source}, func(st lsm.SnapshotScanStart) error {
		res = sqlquery.Result{TableVersion: st.TableVersion}
		return nil
	}, func(rec arrow.RecordBatch) error {
		n := rec.NumRows()
		if req.MaxRows > 0 && res.Rows+n > int64(req.MaxRows) {
			n, res.Truncated = int64(req.MaxRows)-res.Rows, true
		}
		part := rec.NewSlice(0, n)
		defer part.Release()
		res.Rows += n
		res.SnapshotRows += rec.NumRows()
		if err := emit(part); err != nil {
			return err
		}
		if res.Truncated {
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return res, fmt.Errorf("%w: %v", sqlquery.ErrStatement, err)
	}
	return res, nil
}

var errStop = fmt.Errorf("stop")
