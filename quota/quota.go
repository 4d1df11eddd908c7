// Package quota admits appends against the quotas of their tenants (catalog.TenantQuota): rows,
// bytes, sealed-but-unmerged generations and append rows per second. A refused append is an
// *Exceeded error (the API answers 429 QUOTA_EXCEEDED with Retry-After); nothing of it is written.
//
// What a Gate knows comes from the catalog and is at most one refresh interval old: the quotas,
// the usage of every tenant that has a row, byte or generation limit (store and shard stats:
// rows count once sealed — at the flush sweeper's next pass, or at once with ?flush=true — and
// merged), and the append rates the other workers admitted for each rate-limited tenant. Between
// refreshes the Gate adds what it admitted itself. So a row or byte quota can be passed by what
// the tenant appended within about one flush interval that is not sealed yet: a limit, not an
// accounting.
//
// Rate sharing: each worker reports the rate it admitted per rate-limited tenant at every
// refresh (catalog.ReportAppendRates) and allows itself max(quota − the others' rates,
// quota / (workers appending for the tenant)); a worker that stops appending stops reporting and
// its share returns to the others within a few intervals. Within a worker the rate is a token
// bucket holding one second of its allowance that may go into debt by one batch (a batch larger
// than a second's allowance is admitted when the bucket is full, then the tenant waits).
//
// Refreshes run inside the appends that find the Gate's view stale (one at a time, bounded by
// refreshTimeout; other appends meanwhile use the previous view), so a Gate owns no goroutine. A
// catalog that cannot answer keeps the previous view (no view at all: everything is admitted) —
// quotas protect the service from a tenant, they must not turn a catalog outage into a write
// outage.
package quota

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-store/strata/catalog"
)

// Catalog is what a Gate reads and reports (a *catalog.Catalog).
type Catalog interface {
	TenantQuotas(ctx context.Context) ([]catalog.TenantQuota, error)
	TenantUsage(ctx context.Context, t catalog.Tenancy, tenants []string) ([]catalog.TenantUsage, error)
	ReportAppendRates(ctx context.Context, instance string, rates map[string]float64, fresh time.Duration) (map[string]catalog.OtherAppendRate, error)
}

// Options configure a Gate.
type Options struct {
	Tenancy  catalog.Tenancy
	Instance string        // this worker's instance id (its rate reports' key)
	Refresh  time.Duration // how old the Gate's view may get (default 5s)
	Log      *slog.Logger
	// Registerer receives strata_tenant_quota_rejections_total (nil: not registered).
	Registerer prometheus.Registerer
	Now        func() time.Time // default time.Now (tests)
}

// DefaultRefresh is Options.Refresh's default.
const DefaultRefresh = 5 * time.Second

// refreshTimeout bounds one refresh's catalog calls.
const refreshTimeout = 2 * time.Second

// maxTenantLabels bounds the tenant label of the rejection metric: the first tenants refused
// in this process are named, later ones count as "other".
const maxTenantLabels = 32

// Exceeded is a refused append.
type Exceeded struct {
	Tenant string
	// Quota names the limit: rows, bytes, pending_generations or append_rows_per_second.
	Quota      string
	Limit      float64
	Used       float64
	RetryAfter time.Duration
}

func (e *Exceeded) Error() string {
	if e.Quota == "append_rows_per_second" {
		return fmt.Sprintf("tenant %q is over its append rate quota (%g rows/s): retry after %s", e.Tenant, e.Limit, e.RetryAfter)
	}
	return fmt.Sprintf("tenant %q is at its %s quota (%.0f of %.0f): retry after %s", e.Tenant, e.Quota, e.Used, e.Limit, e.RetryAfter)
}

// Gate admits appends. It is safe for concurrent use.
type Gate struct {
	cat      Catalog
	opts     Options
	rejected *prometheus.CounterVec

	mu        sync.Mutex // guards every field below
	loadedAt  time.Time  // when the view was last refreshed (tried)
	loading   bool       // a refresh is running (in some append)
	quotas    map[string]catalog.TenantQuota
	usage     map[string]catalog.TenantUsage
	added     map[string]usageDelta // admitted here since usage was read
	buckets   map[string]*bucket    // rate-limited tenants' buckets
	admitted  map[string]int64      // rows admitted per rate-limited tenant since the last report
	reportAt  time.Time             // when admitted was last reported
	labels    map[string]bool       // tenants named by the rejection metric
	warnedErr bool                  // the last refresh failed (log once per outage)
}

type usageDelta struct{ rows, bytes int64 }

// New returns a Gate over cat.
func New(cat Catalog, opts Options) *Gate {
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Tenancy.Separator == "" {
		opts.Tenancy = catalog.DefaultTenancy
	}
	g := &Gate{cat: cat, opts: opts, added: map[string]usageDelta{}, buckets: map[string]*bucket{},
		admitted: map[string]int64{}, labels: map[string]bool{},
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_tenant_quota_rejections_total",
			Help: "Appends refused with 429 QUOTA_EXCEEDED, by tenant (the first 32 refused in this process; later ones are \"other\") and quota.",
		}, []string{"tenant", "quota"})}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(g.rejected)
	}
	return g
}

// Tenancy is the Gate's tenancy rule.
func (g *Gate) Tenancy() catalog.Tenancy { return g.opts.Tenancy }

// Admit admits an append of rows rows and bytes bytes to the store name, or refuses it with an
// *Exceeded. An admitted append counts against its tenant's quotas.
func (g *Gate) Admit(ctx context.Context, name string, rows, bytes int64) error {
	tenant := g.opts.Tenancy.Of(name)
	g.maybeRefresh(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	q, ok := g.quotas[tenant]
	if !ok {
		return nil
	}
	u, d := g.usage[tenant], g.added[tenant]
	refusal := func(quota string, limit, used float64, retry time.Duration) error {
		label := tenant
		if !g.labels[tenant] {
			if len(g.labels) < maxTenantLabels {
				g.labels[tenant] = true
			} else {
				label = "other"
			}
		}
		g.rejected.WithLabelValues(label, quota).Inc()
		return &Exceeded{Tenant: tenant, Quota: quota, Limit: limit, Used: used, RetryAfter: retry}
	}
	// Row and byte quotas free up only when rows are deleted and merged away: retry after a
	// couple of refreshes. Pending generations fall when the next merge commits.
	slow := max(2*g.opts.Refresh, 10*time.Second)
	switch {
	case q.MaxRows > 0 && u.Rows+d.rows+rows > q.MaxRows:
		return refusal("rows", float64(q.MaxRows), float64(u.Rows+d.rows), slow)
	case q.MaxBytes > 0 && u.Bytes+d.bytes+bytes > q.MaxBytes:
		return refusal("bytes", float64(q.MaxBytes), float64(u.Bytes+d.bytes), slow)
	case q.MaxPendingGenerations > 0 && u.PendingGenerations >= q.MaxPendingGenerations:
		return refusal("pending_generations", float64(q.MaxPendingGenerations), float64(u.PendingGenerations), slow)
	}
	if b := g.buckets[tenant]; b != nil {
		if wait, ok := b.take(g.opts.Now(), rows); !ok {
			return refusal("append_rows_per_second", q.MaxAppendRowsPerSecond, 0, wait)
		}
		g.admitted[tenant] += rows
	}
	d.rows += rows
	d.bytes += bytes
	g.added[tenant] = d
	return nil
}

// maybeRefresh refreshes the view when it is older than the refresh interval and no other
// append is refreshing it.
func (g *Gate) maybeRefresh(ctx context.Context) {
	now := g.opts.Now()
	g.mu.Lock()
	if g.loading || (!g.loadedAt.IsZero() && now.Sub(g.loadedAt) < g.opts.Refresh) {
		g.mu.Unlock()
		return
	}
	g.loading = true
	admitted, since := g.admitted, g.reportAt
	g.admitted = map[string]int64{}
	g.reportAt = now
	g.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refreshTimeout)
	defer cancel()
	quotas, usage, others, err := g.load(ctx, admitted, now.Sub(since))

	g.mu.Lock()
	defer g.mu.Unlock()
	g.loading = false
	g.loadedAt = g.opts.Now()
	if err != nil {
		for t, n := range admitted { // reported next time
			g.admitted[t] += n
		}
		if !g.warnedErr {
			g.opts.Log.Warn("tenant quotas: the catalog did not answer; appends are checked against the last view", "err", err)
			g.warnedErr = true
		}
		return
	}
	g.warnedErr = false
	g.quotas, g.usage = quotas, usage
	g.added = map[string]usageDelta{}
	for t := range g.buckets {
		if quotas[t].MaxAppendRowsPerSecond <= 0 {
			delete(g.buckets, t)
		}
	}
	for t, q := range quotas {
		if q.MaxAppendRowsPerSecond <= 0 {
			continue
		}
		allowance := Allowance(q.MaxAppendRowsPerSecond, others[t])
		if b := g.buckets[t]; b != nil {
			b.setRate(g.loadedAt, allowance)
		} else {
			g.buckets[t] = newBucket(g.loadedAt, allowance)
		}
	}
}

// load reads the quotas, the usage of the tenants with usage limits, and reports this worker's
// admitted rates (admitted rows over elapsed) for the rate-limited ones.
func (g *Gate) load(ctx context.Context, admitted map[string]int64, elapsed time.Duration) (map[string]catalog.TenantQuota, map[string]catalog.TenantUsage, map[string]catalog.OtherAppendRate, error) {
	list, err := g.cat.TenantQuotas(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	quotas := make(map[string]catalog.TenantQuota, len(list))
	var limited []string
	rates := map[string]float64{}
	for _, q := range list {
		quotas[q.Tenant] = q
		if q.MaxRows > 0 || q.MaxBytes > 0 || q.MaxPendingGenerations > 0 {
			limited = append(limited, q.Tenant)
		}
		if q.MaxAppendRowsPerSecond > 0 {
			rate := 0.0
			if elapsed > 0 {
				rate = float64(admitted[q.Tenant]) / elapsed.Seconds()
			}
			rates[q.Tenant] = rate
		}
	}
	usage := map[string]catalog.TenantUsage{}
	if len(limited) > 0 {
		us, err := g.cat.TenantUsage(ctx, g.opts.Tenancy, limited)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, u := range us {
			usage[u.Tenant] = u
		}
	}
	others := map[string]catalog.OtherAppendRate{}
	if len(rates) > 0 {
		// Reports older than three intervals are of workers that stopped appending.
		if others, err = g.cat.ReportAppendRates(ctx, g.opts.Instance, rates, 3*g.opts.Refresh); err != nil {
			return nil, nil, nil, err
		}
	}
	return quotas, usage, others, nil
}

// Allowance is a worker's share of a tenant's rate quota given what the other workers admitted:
// what they leave, and at least an equal share among the workers appending.
func Allowance(quota float64, others catalog.OtherAppendRate) float64 {
	return max(quota-others.RowsPerSecond, quota/float64(others.Workers+1))
}

// bucket is a token bucket of one second's allowance that may go into debt by one take.
type bucket struct {
	rate   float64 // tokens per second
	tokens float64
	last   time.Time
}

func newBucket(now time.Time, rate float64) *bucket {
	return &bucket{rate: rate, tokens: max(rate, 1), last: now}
}

func (b *bucket) fill(now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.tokens+b.rate*d.Seconds(), max(b.rate, 1))
		b.last = now
	}
}

func (b *bucket) setRate(now time.Time, rate float64) {
	b.fill(now)
	b.rate = rate
	b.tokens = min(b.tokens, max(rate, 1))
}

// take spends n tokens when the bucket is not in debt; otherwise it reports how long until it is
// out of debt (at least a second: Retry-After is in whole seconds).
func (b *bucket) take(now time.Time, n int64) (time.Duration, bool) {
	b.fill(now)
	if b.tokens <= 0 {
		wait := time.Duration(math.Ceil(-b.tokens/max(b.rate, 1e-9))) * time.Second
		return max(wait, time.Second), false
	}
	b.tokens -= float64(n)
	return 0, true
}
