// Worker membership: the live API workers and the URLs they advertise, for routing. Each worker
// upserts its row every heartbeat interval and deletes it when it stops; a row not seen within a
// few intervals is of a worker that died (ignored, and purged after a day).
package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Worker is a live API worker.
type Worker struct {
	Instance  string
	URL       string
	StartedAt time.Time
	SeenAt    time.Time
}

// maxWorkers bounds the membership a worker loads.
const maxWorkers = 10_000

// HeartbeatWorker records that instance is alive at url now.
func (c *Catalog) HeartbeatWorker(ctx context.Context, instance, url string) error {
	if instance == "" || len(instance) > 256 || len(url) > 2048 {
		return fmt.Errorf("%w: worker instance %q / url of %d bytes", ErrInvalid, instance, len(url))
	}
	_, err := c.pool.Exec(ctx, `
		INSERT INTO workers (instance, url) VALUES ($1, $2)
		ON CONFLICT (instance) DO UPDATE SET url = EXCLUDED.url, seen_at = now()`, instance, url)
	if err != nil {
		return errorf("catalog: heartbeat of worker %s: %w", instance, err)
	}
	return nil
}

// RemoveWorker deletes instance's row (a worker stopping).
func (c *Catalog) RemoveWorker(ctx context.Context, instance string) error {
	if _, err := c.pool.Exec(ctx, `DELETE FROM workers WHERE instance = $1`, instance); err != nil {
		return errorf("catalog: remove worker %s: %w", instance, err)
	}
	return nil
}

// LiveWorkers returns the workers seen within the last `within`, by instance, and purges rows
// not seen for a day.
func (c *Catalog) LiveWorkers(ctx context.Context, within time.Duration) ([]Worker, error) {
	if _, err := c.pool.Exec(ctx, `DELETE FROM workers WHERE seen_at < now() - interval '1 day'`); err != nil {
		return nil, errorf("catalog: live workers: %w", err)
	}
	rows, err := c.pool.Query(ctx, `
		SELECT instance, url, started_at, seen_at FROM workers
		WHERE seen_at > now() - make_interval(secs => $1)
		ORDER BY instance LIMIT $2`, within.Seconds(), maxWorkers)
	if err != nil {
		return nil, errorf("catalog: live workers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Worker, error) {
		var w Worker
		err := r.Scan(&w.Instance, &w.URL, &w.StartedAt, &w.SeenAt)
		return w, err
	})
	if err != nil {
		return nil, errorf("catalog: live workers: %w", err)
	}
	return out, nil
}
