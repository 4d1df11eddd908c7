// Admin tenant routes: tenants (store-name prefixes, Deps.Tenancy) with their usage, merge
// backlog and quotas, and quota management. What `strata status --by-tenant` and
// `strata tenant quota …` call; appends are checked against the quotas by Deps.Quotas.
package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
)

// TenantLimits are a tenant's quotas (0: no limit) and its maintenance weight (1..1000; default 1).
type TenantLimits struct {
	MaxRows                int64   `json:"max_rows"`
	MaxBytes               int64   `json:"max_bytes"`
	MaxAppendRowsPerSecond float64 `json:"max_append_rows_per_second"`
	MaxPendingGenerations  int64   `json:"max_pending_generations"`
	Weight                 int     `json:"weight"`
}

// TenantQuota is a tenant's quota as stored.
type TenantQuota struct {
	Tenant string `json:"tenant"`
	TenantLimits
	UpdatedAt time.Time `json:"updated_at"`
}

// TenantStatus is a tenant's usage (from its live stores' stats), merge backlog and quota.
type TenantStatus struct {
	Tenant             string `json:"tenant"`
	Stores             int64  `json:"stores"`
	Rows               int64  `json:"rows"`
	Bytes              int64  `json:"bytes"`
	PendingGenerations int64  `json:"pending_generations"`
	// MergeBacklog: stores with 8 or more pending generations, or one pending over 5 minutes.
	MergeBacklog int64        `json:"merge_backlog"`
	Quota        *TenantQuota `json:"quota,omitempty"`
	// OverQuota names the quota the tenant has reached (rows, bytes, pending_generations).
	OverQuota string `json:"over_quota,omitempty"`
}

// TenantsResponse answers GET /api/v1/admin/tenants.
type TenantsResponse struct {
	TenantDepth     int            `json:"tenant_depth"`
	TenantSeparator string         `json:"tenant_separator"`
	Tenants         []TenantStatus `json:"tenants"`
}

// TenantQuotasResponse answers GET /api/v1/admin/tenants/quotas.
type TenantQuotasResponse struct {
	Quotas []TenantQuota `json:"quotas"`
}

func (h *handlers) registerTenants(g *routeGroup) {
	g.GET("/tenants", h.listTenants)
	g.GET("/tenants/quotas", h.listTenantQuotas)
	g.PUT("/tenants/:tenant/quota", h.setTenantQuota)
	g.DELETE("/tenants/:tenant/quota", h.deleteTenantQuota)
}

func quotaDTO(q catalog.TenantQuota) TenantQuota {
	return TenantQuota{Tenant: q.Tenant, UpdatedAt: q.UpdatedAt, TenantLimits: TenantLimits{MaxRows: q.MaxRows, MaxBytes: q.MaxBytes,
		MaxAppendRowsPerSecond: q.MaxAppendRowsPerSecond, MaxPendingGenerations: q.MaxPendingGenerations, Weight: q.Weight}}
}

// Backlog thresholds of the tenant listing: the sweep's defaults.
const (
	backlogMinPending = 8
	backlogStaleAfter = 5 * time.Minute
)

func (h *handlers) listTenants(c echo.Context) error {
	limit, err := adminLimit(c)
	if err != nil {
		return err
	}
	sums, err := h.deps.Stores.Catalog().TenantSummaries(c.Request().Context(), h.deps.Tenancy, backlogMinPending,
		time.Now().Add(-backlogStaleAfter), limit)
	if err != nil {
		return err
	}
	out := TenantsResponse{TenantDepth: h.deps.Tenancy.Depth, TenantSeparator: h.deps.Tenancy.Separator, Tenants: make([]TenantStatus, len(sums))}
	for i, s := range sums {
		st := TenantStatus{Tenant: s.Tenant, Stores: s.Stores, Rows: s.Rows, Bytes: s.Bytes,
			PendingGenerations: s.PendingGenerations, MergeBacklog: s.MergeBacklog}
		if s.Quota != nil {
			q := quotaDTO(*s.Quota)
			st.Quota = &q
			st.OverQuota = s.Quota.OverQuota(s.TenantUsage)
		}
		out.Tenants[i] = st
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handlers) listTenantQuotas(c echo.Context) error {
	qs, err := h.deps.Stores.Catalog().TenantQuotas(c.Request().Context())
	if err != nil {
		return err
	}
	out := TenantQuotasResponse{Quotas: make([]TenantQuota, len(qs))}
	for i, q := range qs {
		out.Quotas[i] = quotaDTO(q)
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handlers) setTenantQuota(c echo.Context) error {
	tenant := c.Param("tenant")
	if err := catalog.ValidateTenant(tenant); err != nil {
		return err
	}
	var body TenantLimits
	if err := decodeBody(c, &body); err != nil {
		return err
	}
	q, err := h.deps.Stores.Catalog().SetTenantQuota(c.Request().Context(), catalog.TenantQuota{Tenant: tenant,
		MaxRows: body.MaxRows, MaxBytes: body.MaxBytes, MaxAppendRowsPerSecond: body.MaxAppendRowsPerSecond,
		MaxPendingGenerations: body.MaxPendingGenerations, Weight: body.Weight})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, quotaDTO(q))
}

func (h *handlers) deleteTenantQuota(c echo.Context) error {
	tenant := c.Param("tenant")
	if err := catalog.ValidateTenant(tenant); err != nil {
		return err
	}
	if err := h.deps.Stores.Catalog().DeleteTenantQuota(c.Request().Context(), tenant); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
