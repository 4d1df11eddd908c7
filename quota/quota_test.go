package quota_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/quota"
)

// fakeCatalog is an in-memory catalog: quotas, usage by tenant, and the rate reports of every
// instance (shared by the Gates of a test, as the database is by workers).
type fakeCatalog struct {
	mu      sync.Mutex
	quotas  []catalog.TenantQuota
	usage   map[string]catalog.TenantUsage
	reports map[string]map[string]float64 // tenant → instance → rate
	down    bool
}

func (f *fakeCatalog) TenantQuotas(context.Context) ([]catalog.TenantQuota, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errors.New("catalog down")
	}
	return append([]catalog.TenantQuota(nil), f.quotas...), nil
}

func (f *fakeCatalog) TenantUsage(_ context.Context, _ catalog.Tenancy, tenants []string) ([]catalog.TenantUsage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []catalog.TenantUsage
	for _, t := range tenants {
		u := f.usage[t]
		u.Tenant = t
		out = append(out, u)
	}
	return out, nil
}

func (f *fakeCatalog) ReportAppendRates(_ context.Context, instance string, rates map[string]float64, _ time.Duration) (map[string]catalog.OtherAppendRate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reports == nil {
		f.reports = map[string]map[string]float64{}
	}
	out := map[string]catalog.OtherAppendRate{}
	for t, r := range rates {
		if f.reports[t] == nil {
			f.reports[t] = map[string]float64{}
		}
		f.reports[t][instance] = r
		var o catalog.OtherAppendRate
		for inst, rr := range f.reports[t] {
			if inst != instance {
				o.RowsPerSecond += rr
				if rr > 0 {
					o.Workers++
				}
			}
		}
		out[t] = o
	}
	return out, nil
}

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)} }
func exceeded(t *testing.T, err error) *quota.Exceeded {
	t.Helper()
	var e *quota.Exceeded
	require.ErrorAs(t, err, &e)
	return e
}

func TestRowByteAndGenerationQuotas(t *testing.T) {
	ctx, clk := context.Background(), newClock()
	cat := &fakeCatalog{
		quotas: []catalog.TenantQuota{{Tenant: "a", MaxRows: 1000, MaxBytes: 1 << 20}, {Tenant: "b", MaxPendingGenerations: 10}},
		usage:  map[string]catalog.TenantUsage{"a": {Rows: 900}, "b": {PendingGenerations: 10}},
	}
	g := quota.New(cat, quota.Options{Instance: "w1", Now: clk.now})
	require.NoError(t, g.Admit(ctx, "free.x", 1e9, 1e12), "a tenant without a quota")
	require.NoError(t, g.Admit(ctx, "a.exp-1", 60, 10))
	require.NoError(t, g.Admit(ctx, "a", 40, 10)) // the store named like its tenant belongs to it
	e := exceeded(t, g.Admit(ctx, "a.exp-2", 1, 10))
	require.Equal(t, "rows", e.Quota)
	require.Equal(t, "a", e.Tenant)
	require.Equal(t, 1000.0, e.Used)
	require.GreaterOrEqual(t, e.RetryAfter, 10*time.Second)
	require.Equal(t, "pending_generations", exceeded(t, g.Admit(ctx, "b.x", 1, 1)).Quota)

	// The next refresh reads the usage again (a merge brought b's generations down, a
	// compaction dropped a's deleted rows) and forgets what was counted locally.
	cat.mu.Lock()
	cat.usage = map[string]catalog.TenantUsage{"a": {Rows: 100, Bytes: 1<<20 - 5}, "b": {PendingGenerations: 2}}
	cat.mu.Unlock()
	clk.add(quota.DefaultRefresh)
	require.NoError(t, g.Admit(ctx, "b.x", 1, 1))
	require.Equal(t, "bytes", exceeded(t, g.Admit(ctx, "a.y", 1, 10)).Quota)
	require.NoError(t, g.Admit(ctx, "a.y", 1, 5))
}

func TestTenancyDepth(t *testing.T) {
	ctx := context.Background()
	cat := &fakeCatalog{quotas: []catalog.TenantQuota{{Tenant: "org-team", MaxRows: 10}}}
	g := quota.New(cat, quota.Options{Tenancy: catalog.Tenancy{Depth: 2, Separator: "-"}})
	require.NoError(t, g.Admit(ctx, "org-team-exp1", 10, 0))
	require.Error(t, g.Admit(ctx, "org-team-exp2", 1, 0))
	require.NoError(t, g.Admit(ctx, "org-other-exp1", 100, 0))
}

func TestRateQuotaOneWorker(t *testing.T) {
	ctx, clk := context.Background(), newClock()
	cat := &fakeCatalog{quotas: []catalog.TenantQuota{{Tenant: "a", MaxAppendRowsPerSecond: 100}}}
	g := quota.New(cat, quota.Options{Instance: "w1", Now: clk.now})
	admitted := 0
	for range 10 {
		if g.Admit(ctx, "a.s", 30, 0) == nil {
			admitted += 30
		}
	}
	require.Equal(t, 120, admitted, "one second's allowance, plus one batch of debt")
	e := exceeded(t, g.Admit(ctx, "a.s", 30, 0))
	require.Equal(t, "append_rows_per_second", e.Quota)
	require.Equal(t, time.Second, e.RetryAfter)
	// Over ten seconds the admitted rate is the quota's.
	admitted = 0
	for range 1000 {
		clk.add(10 * time.Millisecond)
		if g.Admit(ctx, "a.s", 10, 0) == nil {
			admitted += 10
		}
	}
	require.InDelta(t, 1000, admitted, 60)
	// A batch larger than a second's allowance is admitted when the bucket is full.
	clk.add(2 * time.Second)
	require.NoError(t, g.Admit(ctx, "a.s", 500, 0))
	e = exceeded(t, g.Admit(ctx, "a.s", 1, 0))
	require.Equal(t, 4*time.Second, e.RetryAfter, "the debt of 400 rows at 100/s")
}

// Two workers appending for one tenant share its rate: together they admit about the quota.
func TestRateQuotaSharedByWorkers(t *testing.T) {
	ctx, clk := context.Background(), newClock()
	cat := &fakeCatalog{quotas: []catalog.TenantQuota{{Tenant: "a", MaxAppendRowsPerSecond: 1000}}}
	w1 := quota.New(cat, quota.Options{Instance: "w1", Now: clk.now, Refresh: time.Second})
	w2 := quota.New(cat, quota.Options{Instance: "w2", Now: clk.now, Refresh: time.Second})
	total := 0
	const seconds = 30
	for step := range seconds * 100 {
		clk.add(10 * time.Millisecond)
		for _, g := range []*quota.Gate{w1, w2} {
			for range 5 { // each worker is offered 5,000 rows/s
				if g.Admit(ctx, "a.s", 10, 0) == nil && step >= 10*100 {
					total += 10
				}
			}
		}
	}
	rate := float64(total) / (seconds - 10)
	require.InDelta(t, 1000, rate, 250, "admitted %.0f rows/s in all", rate)

	// Alone again, w1 gets the whole rate once w2's report has aged.
	require.Equal(t, 1000.0, quota.Allowance(1000, catalog.OtherAppendRate{}))
	require.Equal(t, 500.0, quota.Allowance(1000, catalog.OtherAppendRate{RowsPerSecond: 900, Workers: 1}))
	require.Equal(t, 700.0, quota.Allowance(1000, catalog.OtherAppendRate{RowsPerSecond: 300, Workers: 3}))
}

// A catalog that stops answering keeps the last view; one that never answered admits everything.
func TestCatalogOutage(t *testing.T) {
	ctx, clk := context.Background(), newClock()
	cat := &fakeCatalog{quotas: []catalog.TenantQuota{{Tenant: "a", MaxRows: 10}}, usage: map[string]catalog.TenantUsage{"a": {Rows: 10}}}
	down := &fakeCatalog{down: true}
	require.NoError(t, quota.New(down, quota.Options{Now: clk.now}).Admit(ctx, "a.x", 1e6, 0))
	g := quota.New(cat, quota.Options{Now: clk.now})
	require.Error(t, g.Admit(ctx, "a.x", 1, 0))
	cat.mu.Lock()
	cat.down = true
	cat.mu.Unlock()
	clk.add(time.Minute)
	require.Error(t, g.Admit(ctx, "a.x", 1, 0), "the last view still holds")
}

// The rejection metric names at most 32 tenants; the rest are "other".
func TestRejectionMetricCardinality(t *testing.T) {
	ctx := context.Background()
	cat := &fakeCatalog{usage: map[string]catalog.TenantUsage{}}
	for i := range 40 {
		cat.quotas = append(cat.quotas, catalog.TenantQuota{Tenant: fmt.Sprintf("t%02d", i), MaxRows: 1})
	}
	reg := prometheus.NewRegistry()
	g := quota.New(cat, quota.Options{Registerer: reg})
	for i := range 40 {
		require.Error(t, g.Admit(ctx, fmt.Sprintf("t%02d.x", i), 2, 0))
	}
	require.Equal(t, 33, testutil.CollectAndCount(reg, "strata_tenant_quota_rejections_total"))
	n, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, n)
}
