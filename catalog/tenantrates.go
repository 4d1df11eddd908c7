// Tenant append rates: how the workers share a tenant's rate quota. Each worker reports the rate
// it admitted per rate-limited tenant over its last refresh, and reads back what the other
// workers reported recently; a worker's own allowance is derived from that (package quota).
package catalog

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// OtherAppendRate is what the other workers reported for a tenant.
type OtherAppendRate struct {
	RowsPerSecond float64 // their sum
	Workers       int     // how many reported a rate above zero
}

// ReportAppendRates records instance's admitted rates (rows/s, by tenant) and returns, for
// every tenant in rates, the sum of the other instances' reports younger than fresh. Reports
// older than a day are purged on the way (a worker that went away leaves nothing behind).
func (c *Catalog) ReportAppendRates(ctx context.Context, instance string, rates map[string]float64, fresh time.Duration) (map[string]OtherAppendRate, error) {
	if len(rates) == 0 {
		return map[string]OtherAppendRate{}, nil
	}
	tenants := make([]string, 0, len(rates))
	for t := range rates {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants) // a stable lock order across concurrent reports
	values := make([]float64, len(tenants))
	for i, t := range tenants {
		values[i] = rates[t]
	}
	out := make(map[string]OtherAppendRate, len(tenants))
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO tenant_append_rates AS r (tenant, instance, rows_per_second, reported_at)
			SELECT t, $2, v, now() FROM unnest($1::text[], $3::float8[]) AS u(t, v)
			ON CONFLICT (tenant, instance) DO UPDATE SET rows_per_second = EXCLUDED.rows_per_second, reported_at = now()`,
			tenants, instance, values); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			DELETE FROM tenant_append_rates WHERE tenant = ANY($1) AND reported_at < now() - interval '1 day'`, tenants); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT tenant, COALESCE(sum(rows_per_second), 0), count(*) FILTER (WHERE rows_per_second > 0)
			FROM tenant_append_rates
			WHERE tenant = ANY($1) AND instance <> $2 AND reported_at > now() - make_interval(secs => $3)
			GROUP BY tenant`, tenants, instance, fresh.Seconds())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t string
			var o OtherAppendRate
			if err := rows.Scan(&t, &o.RowsPerSecond, &o.Workers); err != nil {
				return err
			}
			out[t] = o
		}
		return rows.Err()
	})
	if err != nil {
		return nil, errorf("catalog: report append rates of %s: %w", instance, err)
	}
	return out, nil
}
