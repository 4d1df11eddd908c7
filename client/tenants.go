// Tenants (admin token): tenants' usage, merge backlog and quotas, and quota management.
package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// TenantLimits are a tenant's quotas (0: no limit) and its maintenance weight (1..1000).
type TenantLimits struct {
	MaxRows                int64   `json:"max_rows"`
	MaxBytes               int64   `json:"max_bytes"`
	MaxAppendRowsPerSecond float64 `json:"max_append_rows_per_second"`
	MaxPendingGenerations  int64   `json:"max_pending_generations"`
	Weight                 int     `json:"weight"`
}

// TenantQuota is a tenant's stored quota.
type TenantQuota struct {
	Tenant string `json:"tenant"`
	TenantLimits
	UpdatedAt time.Time `json:"updated_at"`
}

// TenantStatus is a tenant's usage, merge backlog and quota.
type TenantStatus struct {
	Tenant             string       `json:"tenant"`
	Stores             int64        `json:"stores"`
	Rows               int64        `json:"rows"`
	Bytes              int64        `json:"bytes"`
	PendingGenerations int64        `json:"pending_generations"`
	MergeBacklog       int64        `json:"merge_backlog"`
	Quota              *TenantQuota `json:"quota,omitempty"`
	OverQuota          string       `json:"over_quota,omitempty"`
}

// TenantsReport lists tenants, most pending generations first.
type TenantsReport struct {
	TenantDepth     int            `json:"tenant_depth"`
	TenantSeparator string         `json:"tenant_separator"`
	Tenants         []TenantStatus `json:"tenants"`
}

// Tenants reads at most limit tenants (0: the server's default, 100).
func (c *Client) Tenants(ctx context.Context, limit int) (TenantsReport, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var r TenantsReport
	err := c.doJSON(ctx, request{method: http.MethodGet, path: "/api/v1/admin/tenants", query: q, admin: true}, nil, &r)
	return r, err
}

// TenantQuotas lists every tenant quota.
func (c *Client) TenantQuotas(ctx context.Context) ([]TenantQuota, error) {
	var r struct {
		Quotas []TenantQuota `json:"quotas"`
	}
	err := c.doJSON(ctx, request{method: http.MethodGet, path: "/api/v1/admin/tenants/quotas", admin: true}, nil, &r)
	return r.Quotas, err
}

// SetTenantQuota sets tenant's quotas and weight (replacing what it had).
func (c *Client) SetTenantQuota(ctx context.Context, tenant string, limits TenantLimits) (TenantQuota, error) {
	var q TenantQuota
	err := c.doJSON(ctx, request{method: http.MethodPut, path: "/api/v1/admin/tenants/" + url.PathEscape(tenant) + "/quota", admin: true}, limits, &q)
	return q, err
}

// DeleteTenantQuota removes tenant's quotas.
func (c *Client) DeleteTenantQuota(ctx context.Context, tenant string) error {
	return c.doJSON(ctx, request{method: http.MethodDelete, path: "/api/v1/admin/tenants/" + url.PathEscape(tenant) + "/quota", admin: true}, nil, nil)
}
