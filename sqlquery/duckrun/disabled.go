//go:build !duckdb_arrow

// Without -tags duckdb_arrow the binary links no DuckDB: the runner answers that it has no SQL.
package duckrun

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/lsm"
)

// Available reports whether this binary can run SQL.
const Available = false

// Runner refuses every query: this binary was built without DuckDB.
type Runner struct{}

// New returns the refusing runner.
func New(Limits, *slog.Logger) (*Runner, error) { return &Runner{}, nil }

// Run refuses the query.
func (*Runner) Run(context.Context, *lsm.Store, sqlquery.Request, func(arrow.RecordBatch) error) (sqlquery.Result, error) {
	return sqlquery.Result{}, fmt.Errorf("%w: this binary was built without SQL (build it with -tags duckdb_arrow, as make build does)", sqlquery.ErrUnavailable)
}
