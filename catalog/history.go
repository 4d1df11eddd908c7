// Maintenance history: every attempt of a store's maintenance activities, newest first (see
// migration 010). Written by the activity when an attempt ends; each store keeps its last
// maxRunsKept rows; deleting a store drops them.
package catalog

import (
	"context"
	"strings"
	"time"
)

// MaintenanceRun is one attempt of a maintenance operation on a store.
type MaintenanceRun struct {
	Kind       Kind
	Name       string
	Op         string
	StartedAt  time.Time
	FinishedAt time.Time
	Outcome    string // RunOK or RunFailed
	Detail     string // the result as JSON, or the error
}

// Outcomes of a maintenance run.
const (
	RunOK     = "ok"
	RunFailed = "failed"
)

// maxRunsKept is how many runs of a store the history keeps.
const maxRunsKept = 100

// RecordRun appends a run to the store's history and drops what falls past maxRunsKept.
func (c *Catalog) RecordRun(ctx context.Context, r MaintenanceRun) error {
	detail := truncateUTF8(strings.ReplaceAll(strings.ToValidUTF8(r.Detail, "?"), "\x00", ""), maxFailureMessage)
	_, err := c.pool.Exec(ctx, `
		WITH added AS (
			INSERT INTO maintenance_runs (kind, name, op, started_at, finished_at, outcome, detail)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id
		)
		DELETE FROM maintenance_runs WHERE id IN (
			SELECT id FROM maintenance_runs WHERE kind = $1 AND name = $2
			ORDER BY finished_at DESC, id DESC OFFSET $8
		)`, string(r.Kind), r.Name, r.Op, r.StartedAt, r.FinishedAt, r.Outcome, detail, maxRunsKept-1)
	if err != nil {
		return errorf("catalog: record %s run of %s/%s: %w", r.Op, r.Kind, r.Name, err)
	}
	return nil
}

// ListRuns returns the store's last limit runs (at most maxRunsKept), newest first.
func (c *Catalog) ListRuns(ctx context.Context, kind Kind, name string, limit int) ([]MaintenanceRun, error) {
	if limit <= 0 || limit > maxRunsKept {
		limit = maxRunsKept
	}
	rows, err := c.pool.Query(ctx, `
		SELECT op, started_at, finished_at, outcome, detail FROM maintenance_runs
		WHERE kind = $1 AND name = $2 ORDER BY finished_at DESC, id DESC LIMIT $3`, string(kind), name, limit)
	if err != nil {
		return nil, errorf("catalog: runs of %s/%s: %w", kind, name, err)
	}
	defer rows.Close()
	var out []MaintenanceRun
	for rows.Next() {
		r := MaintenanceRun{Kind: kind, Name: name}
		if err := rows.Scan(&r.Op, &r.StartedAt, &r.FinishedAt, &r.Outcome, &r.Detail); err != nil {
			return nil, errorf("catalog: runs of %s/%s: %w", kind, name, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("catalog: runs of %s/%s: %w", kind, name, err)
	}
	return out, nil
}
