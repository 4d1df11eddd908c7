// Tenants: a tenant is a prefix of store names — the first Depth segments of a name split at
// Separator ("team-a.exp-17" is tenant "team-a" at depth 1 with "."; a name with fewer segments
// is its own tenant). This file owns the tenancy rule (in Go and in SQL, which must agree), the
// tenant_quotas table and the usage sums quotas are checked against.
package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tenancy says how store names map to tenants.
type Tenancy struct {
	// Depth is how many name segments make a tenant; 0 puts every store in one tenant ("").
	Depth int
	// Separator splits segments: one of ".", "-", "_".
	Separator string
}

// DefaultTenancy: the first dot-separated segment ("team-a.exp-17" → "team-a").
var DefaultTenancy = Tenancy{Depth: 1, Separator: "."}

// Validate reports a tenancy no name could be split by.
func (t Tenancy) Validate() error {
	if t.Depth < 0 || t.Depth > 16 {
		return fmt.Errorf("%w: tenant depth %d: want 0..16", ErrInvalid, t.Depth)
	}
	if t.Separator != "." && t.Separator != "-" && t.Separator != "_" {
		return fmt.Errorf("%w: tenant separator %q: want one of . - _", ErrInvalid, t.Separator)
	}
	return nil
}

// Of returns the tenant of a store name. It agrees with Tenancy.sql.
func (t Tenancy) Of(name string) string {
	if t.Depth <= 0 {
		return ""
	}
	end := 0
	for i := range t.Depth {
		j := strings.Index(name[end:], t.Separator)
		if j < 0 {
			return name
		}
		if i == t.Depth-1 {
			return name[:end+j]
		}
		end += j + len(t.Separator)
	}
	return name
}

// separator is the SQL form's separator argument ("." when unset).
func (t Tenancy) separator() string {
	if t.Separator == "" {
		return "."
	}
	return t.Separator
}

// sql is Tenancy.Of over the column col in SQL, the separator a parameter (sep) and the depth a
// literal: split_part for depth 1 (the default; the cheapest), the first Depth elements of the
// split name otherwise.
func (t Tenancy) sql(col, sep string) string {
	switch {
	case t.Depth <= 0:
		return `''::text`
	case t.Depth == 1:
		return fmt.Sprintf(`split_part(%s, %s::text, 1)`, col, sep)
	}
	return fmt.Sprintf(`array_to_string((string_to_array(%s, %s::text))[1:%d], %s::text)`, col, sep, t.Depth, sep)
}

// TenantQuota is a tenant's limits (0: none) and its maintenance weight.
type TenantQuota struct {
	Tenant string
	// MaxRows bounds the tenant's rows: base-table rows plus sealed, unmerged row versions.
	MaxRows int64
	// MaxBytes bounds the tenant's bytes: base-table bytes plus sealed, unmerged bytes.
	MaxBytes int64
	// MaxAppendRowsPerSecond bounds the rate of appended rows, shared by the workers appending.
	MaxAppendRowsPerSecond float64
	// MaxPendingGenerations bounds sealed, unmerged generations over the tenant's stores.
	MaxPendingGenerations int64
	// Weight is the tenant's share of maintenance (1..1000; tenants without a quota row weigh 1).
	Weight    int
	UpdatedAt time.Time
}

// ValidateTenant checks a tenant name: a non-empty name prefix.
func ValidateTenant(tenant string) error {
	if tenant == "" || len(tenant) > MaxNameLength {
		return fmt.Errorf("%w: tenant %q: want a store name prefix of 1..%d characters", ErrInvalid, tenant, MaxNameLength)
	}
	for i := 0; i < len(tenant); i++ {
		if !isNameByte(tenant[i], i == 0) {
			return fmt.Errorf("%w: tenant %q: want a store name prefix ([A-Za-z0-9_][A-Za-z0-9._-]*)", ErrInvalid, tenant)
		}
	}
	return nil
}

// SetTenantQuota creates or replaces tenant's quota.
func (c *Catalog) SetTenantQuota(ctx context.Context, q TenantQuota) (TenantQuota, error) {
	if err := ValidateTenant(q.Tenant); err != nil {
		return TenantQuota{}, err
	}
	if q.Weight == 0 {
		q.Weight = 1
	}
	if q.MaxRows < 0 || q.MaxBytes < 0 || q.MaxAppendRowsPerSecond < 0 || q.MaxPendingGenerations < 0 || q.Weight < 1 || q.Weight > 1000 {
		return TenantQuota{}, fmt.Errorf("%w: quota of %q: limits must be >= 0 and weight 1..1000", ErrInvalid, q.Tenant)
	}
	out, err := scanQuota(c.pool.QueryRow(ctx, `
		INSERT INTO tenant_quotas (tenant, max_rows, max_bytes, max_append_rows_per_second, max_pending_generations, weight, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, now())
		ON CONFLICT (tenant) DO UPDATE SET max_rows = EXCLUDED.max_rows, max_bytes = EXCLUDED.max_bytes,
			max_append_rows_per_second = EXCLUDED.max_append_rows_per_second,
			max_pending_generations = EXCLUDED.max_pending_generations, weight = EXCLUDED.weight, updated_at = now()
		RETURNING `+quotaColumns, q.Tenant, q.MaxRows, q.MaxBytes, q.MaxAppendRowsPerSecond, q.MaxPendingGenerations, q.Weight))
	if err != nil {
		return TenantQuota{}, errorf("catalog: set quota of %s: %w", q.Tenant, err)
	}
	return out, nil
}

// DeleteTenantQuota removes tenant's quota (ErrNotFound when it had none).
func (c *Catalog) DeleteTenantQuota(ctx context.Context, tenant string) error {
	tag, err := c.pool.Exec(ctx, `DELETE FROM tenant_quotas WHERE tenant = $1`, tenant)
	if err != nil {
		return errorf("catalog: delete quota of %s: %w", tenant, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: tenant %s has no quota", ErrNotFound, tenant)
	}
	return nil
}

// maxQuotas bounds the quota rows a worker loads (each is a tenant it checks appends against).
const maxQuotas = 10_000

// TenantQuotas returns every quota, by tenant (at most maxQuotas).
func (c *Catalog) TenantQuotas(ctx context.Context) ([]TenantQuota, error) {
	rows, err := c.pool.Query(ctx, `SELECT `+quotaColumns+` FROM tenant_quotas ORDER BY tenant LIMIT $1`, maxQuotas)
	if err != nil {
		return nil, errorf("catalog: list quotas: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TenantQuota, error) { return scanQuota(r) })
	if err != nil {
		return nil, errorf("catalog: list quotas: %w", err)
	}
	return out, nil
}

const quotaColumns = `tenant, max_rows, max_bytes, max_append_rows_per_second, max_pending_generations, weight, updated_at`

func scanQuota(row pgx.Row) (TenantQuota, error) {
	var q TenantQuota
	var weight int32
	err := row.Scan(&q.Tenant, &q.MaxRows, &q.MaxBytes, &q.MaxAppendRowsPerSecond, &q.MaxPendingGenerations, &weight, &q.UpdatedAt)
	q.Weight = int(weight)
	return q, err
}

// TenantUsage is what a tenant's live stores hold, from their stats.
type TenantUsage struct {
	Tenant             string
	Stores             int64
	Rows               int64 // base-table rows plus sealed, unmerged row versions
	Bytes              int64 // base-table bytes plus sealed, unmerged bytes
	PendingGenerations int64
	// MergeBacklog: stores with at least the sweep's minimum of pending generations, or with a
	// generation pending longer than its stale bound (TenantSummaries only).
	MergeBacklog int64
}

// kindNames is every kind's name (the first column of store_stats' primary key).
var kindNames = func() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k)
	}
	return out
}()

// nextByte is s with its last byte incremented: the end of the range of names starting with s
// (s ends with a separator, never 0xff).
func nextByte(s string) string { return s[:len(s)-1] + string(rune(s[len(s)-1]+1)) }

// TenantUsage sums the stats of each tenant's live stores: the names equal to the tenant or
// starting with it and the separator, read as a range of the stats' primary key per tenant.
func (c *Catalog) TenantUsage(ctx context.Context, t Tenancy, tenants []string) ([]TenantUsage, error) {
	if len(tenants) == 0 {
		return nil, nil
	}
	sep := t.separator()
	lows, highs := make([]string, len(tenants)), make([]string, len(tenants))
	for i, tn := range tenants {
		lows[i], highs[i] = tn+sep, nextByte(tn+sep)
	}
	rows, err := c.pool.Query(ctx, `
		SELECT t.tenant, count(s.name), COALESCE(sum(s.base_rows), 0)::bigint, COALESCE(sum(s.bytes), 0)::bigint,
		       COALESCE(sum(s.pending_generations), 0)::bigint,
		       COALESCE(sum(p.rows), 0)::bigint, COALESCE(sum(p.bytes), 0)::bigint
		FROM unnest($1::text[], $2::text[], $3::text[]) AS t(tenant, low, high)
		LEFT JOIN store_stats s ON s.kind = ANY($4::text[])
		      AND (s.name = t.tenant COLLATE "C" OR (s.name >= t.low COLLATE "C" AND s.name < t.high COLLATE "C"))
		      AND `+liveStore+`
		LEFT JOIN LATERAL (
			SELECT sum(h.pending_rows) AS rows, sum(h.pending_bytes) AS bytes FROM shard_stats h
			WHERE h.kind = s.kind AND h.name = s.name AND h.pending_generations > 0
		) p ON true
		GROUP BY t.tenant ORDER BY t.tenant`, tenants, lows, highs, kindNames)
	if err != nil {
		return nil, errorf("catalog: tenant usage: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TenantUsage, error) {
		var u TenantUsage
		var pendingRows, pendingBytes int64
		err := r.Scan(&u.Tenant, &u.Stores, &u.Rows, &u.Bytes, &u.PendingGenerations, &pendingRows, &pendingBytes)
		u.Rows += pendingRows
		u.Bytes += pendingBytes
		return u, err
	})
	if err != nil {
		return nil, errorf("catalog: tenant usage: %w", err)
	}
	return out, nil
}

// TenantSummary is a tenant's usage with its quota (nil when it has none).
type TenantSummary struct {
	TenantUsage
	Quota *TenantQuota
}

// TenantSummaries groups every live store's stats by tenant — usage and merge backlog (stores
// with at least minPending pending generations or one pending since before staleBefore) — most
// pending generations first, at most limit tenants, with their quotas. It reads every stats row
// (about a second at a million stores): an operator's view, not a per-request check.
func (c *Catalog) TenantSummaries(ctx context.Context, t Tenancy, minPending int, staleBefore time.Time, limit int) ([]TenantSummary, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	sep := t.separator()
	rows, err := c.pool.Query(ctx, `
		WITH usage AS (
			SELECT `+t.sql("s.name", "$1")+` AS tenant, count(*) AS stores,
			       sum(s.base_rows)::bigint AS rows, sum(s.bytes)::bigint AS bytes,
			       sum(s.pending_generations)::bigint AS pending,
			       count(*) FILTER (WHERE s.pending_generations >= $2 OR s.oldest_pending_at < $3) AS backlog
			FROM store_stats s WHERE `+liveStore+`
			GROUP BY 1
		)
		SELECT u.tenant, u.stores, u.rows, u.bytes, u.pending, u.backlog, q.tenant IS NOT NULL,
		       COALESCE(q.max_rows, 0), COALESCE(q.max_bytes, 0), COALESCE(q.max_append_rows_per_second, 0),
		       COALESCE(q.max_pending_generations, 0), COALESCE(q.weight, 1), COALESCE(q.updated_at, now())
		FROM usage u LEFT JOIN tenant_quotas q ON q.tenant = u.tenant
		ORDER BY u.pending DESC, u.backlog DESC, u.tenant LIMIT $4`, sep, minPending, staleBefore, limit)
	if err != nil {
		return nil, errorf("catalog: tenant summaries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TenantSummary, error) {
		var s TenantSummary
		var q TenantQuota
		var has bool
		var weight int32
		err := r.Scan(&s.Tenant, &s.Stores, &s.Rows, &s.Bytes, &s.PendingGenerations, &s.MergeBacklog, &has,
			&q.MaxRows, &q.MaxBytes, &q.MaxAppendRowsPerSecond, &q.MaxPendingGenerations, &weight, &q.UpdatedAt)
		if has {
			q.Tenant, q.Weight = s.Tenant, int(weight)
			s.Quota = &q
		}
		return s, err
	})
	if err != nil {
		return nil, errorf("catalog: tenant summaries: %w", err)
	}
	return out, nil
}

// OverQuota names the first limit of q that u reaches ("" when none): rows, bytes or
// pending_generations (the rate is checked by the workers, not from stats).
func (q TenantQuota) OverQuota(u TenantUsage) string {
	switch {
	case q.MaxRows > 0 && u.Rows >= q.MaxRows:
		return "rows"
	case q.MaxBytes > 0 && u.Bytes >= q.MaxBytes:
		return "bytes"
	case q.MaxPendingGenerations > 0 && u.PendingGenerations >= q.MaxPendingGenerations:
		return "pending_generations"
	}
	return ""
}
