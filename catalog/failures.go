// Failing maintenance: the operations of a store whose latest run exhausted its retries (see
// migration 007). Rows are written and cleared by the store's maintenance workflow through an
// activity; deleting a store drops its rows with its stats.
package catalog

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaintenanceFailure is one failing operation of a store.
type MaintenanceFailure struct {
	Kind      Kind
	Name      string
	Op        string
	ErrorType string // a stable type (workflows.Err*)
	Message   string
	Since     time.Time // the first failure of the current streak
	LastAt    time.Time // the latest failure
	Failures  int       // failed runs in the current streak
}

// maxFailureMessage bounds a stored message (the full one is in the workflow's history).
const maxFailureMessage = 2000

// RecordFailure records that op of kind/name failed (again); Since and Failures describe the
// streak as the workflow counts it.
func (c *Catalog) RecordFailure(ctx context.Context, f MaintenanceFailure) error {
	// Messages quote storage and driver errors: keep them storable whatever they contain.
	msg := truncateUTF8(strings.ReplaceAll(strings.ToValidUTF8(f.Message, "?"), "\x00", ""), maxFailureMessage)
	_, err := c.pool.Exec(ctx, `
		INSERT INTO maintenance_failures (kind, name, op, error_type, message, failing_since, last_failed_at, failures)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (kind, name, op) DO UPDATE SET error_type = EXCLUDED.error_type, message = EXCLUDED.message,
			failing_since = EXCLUDED.failing_since, last_failed_at = EXCLUDED.last_failed_at, failures = EXCLUDED.failures`,
		string(f.Kind), f.Name, f.Op, f.ErrorType, msg, f.Since, f.LastAt, f.Failures)
	if err != nil {
		return errorf("catalog: record failure of %s on %s/%s: %w", f.Op, f.Kind, f.Name, err)
	}
	return nil
}

// ClearFailure forgets the failure of op on kind/name (it succeeded); a missing row is fine.
func (c *Catalog) ClearFailure(ctx context.Context, kind Kind, name, op string) error {
	_, err := c.pool.Exec(ctx, `DELETE FROM maintenance_failures WHERE kind = $1 AND name = $2 AND op = $3`, string(kind), name, op)
	if err != nil {
		return errorf("catalog: clear failure of %s on %s/%s: %w", op, kind, name, err)
	}
	return nil
}

// StoreFailure returns the recorded failure of op on kind/name, or nil when there is none.
func (c *Catalog) StoreFailure(ctx context.Context, kind Kind, name, op string) (*MaintenanceFailure, error) {
	f := MaintenanceFailure{Kind: kind, Name: name, Op: op}
	var n int32
	err := c.pool.QueryRow(ctx, `
		SELECT error_type, message, failing_since, last_failed_at, failures FROM maintenance_failures
		WHERE kind = $1 AND name = $2 AND op = $3`, string(kind), name, op).Scan(&f.ErrorType, &f.Message, &f.Since, &f.LastAt, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, errorf("catalog: failure of %s on %s/%s: %w", op, kind, name, err)
	}
	f.Failures = int(n)
	return &f, nil
}

// ListFailures returns the failing operations of live stores, longest failing first.
func (c *Catalog) ListFailures(ctx context.Context, limit int) ([]MaintenanceFailure, error) {
	if limit <= 0 {
		limit = 100
	}
	return c.queryFailures(ctx, `
		SELECT f.kind, f.name, f.op, f.error_type, f.message, f.failing_since, f.last_failed_at, f.failures
		FROM maintenance_failures f JOIN stores r ON r.kind = f.kind AND r.name = f.name AND r.deleted_at IS NULL
		ORDER BY f.failing_since, f.kind, f.name, f.op LIMIT $1`, min(limit, 10_000))
}

// StoreFailures returns the failing operations of one store, longest failing first.
func (c *Catalog) StoreFailures(ctx context.Context, kind Kind, name string) ([]MaintenanceFailure, error) {
	return c.queryFailures(ctx, `
		SELECT kind, name, op, error_type, message, failing_since, last_failed_at, failures
		FROM maintenance_failures WHERE kind = $1 AND name = $2 ORDER BY failing_since, op`, string(kind), name)
}

// queryFailures runs a query answering failure rows.
func (c *Catalog) queryFailures(ctx context.Context, sql string, args ...any) ([]MaintenanceFailure, error) {
	rows, err := c.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, errorf("catalog: list failures: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MaintenanceFailure, error) {
		var f MaintenanceFailure
		var kind string
		var n int32
		err := r.Scan(&kind, &f.Name, &f.Op, &f.ErrorType, &f.Message, &f.Since, &f.LastAt, &n)
		f.Kind, f.Failures = Kind(kind), int(n)
		return f, err
	})
	if err != nil {
		return nil, errorf("catalog: list failures: %w", err)
	}
	return out, nil
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
