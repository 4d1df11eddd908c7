package catalog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
)

func TestTenancyOf(t *testing.T) {
	d1 := catalog.Tenancy{Depth: 1, Separator: "."}
	d2 := catalog.Tenancy{Depth: 2, Separator: "-"}
	for _, c := range []struct {
		t          catalog.Tenancy
		name, want string
	}{
		{d1, "team-a.exp-17", "team-a"}, {d1, "solo", "solo"}, {d1, "a..b", "a"}, {d1, "a.", "a"},
		{d2, "team-a-exp-17", "team-a"}, {d2, "team-a", "team-a"}, {d2, "team", "team"}, {d2, "a--b", "a-"},
		{catalog.Tenancy{Separator: "."}, "anything.at-all", ""},
	} {
		require.Equal(t, c.want, c.t.Of(c.name), "%+v %q", c.t, c.name)
	}
	require.Error(t, catalog.Tenancy{Depth: 1, Separator: "/"}.Validate())
	require.Error(t, catalog.Tenancy{Depth: -1, Separator: "."}.Validate())
	require.NoError(t, catalog.DefaultTenancy.Validate())
}

// The SQL form of the tenancy rule (candidate ordering, summaries) agrees with Tenancy.Of on
// random names, separators and depths.
func TestTenancySQLAgreesWithGo(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.Database(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	rng := rand.New(rand.NewPCG(7, 8))
	const alphabet = "ab.-_"
	for range 500 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		b[0] = 'a'
		name := string(b)
		tn := catalog.Tenancy{Depth: rng.IntN(4), Separator: string(".-_"[rng.IntN(3)])}
		if tn.Depth == 0 {
			require.Empty(t, tn.Of(name))
			continue
		}
		var got string
		require.NoError(t, conn.QueryRow(ctx, "SELECT "+catalog.TenantSQLForTest(tn, "$1::text", "$2"), name, tn.Separator).Scan(&got))
		require.Equal(t, tn.Of(name), got, "%+v %q", tn, name)
	}
}

func TestTenantQuotas(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	q, err := c.SetTenantQuota(ctx, catalog.TenantQuota{Tenant: "team-a", MaxRows: 100, MaxAppendRowsPerSecond: 5.5})
	require.NoError(t, err)
	require.Equal(t, 1, q.Weight)
	_, err = c.SetTenantQuota(ctx, catalog.TenantQuota{Tenant: "team-a", MaxBytes: 10, Weight: 3})
	require.NoError(t, err)
	for _, bad := range []catalog.TenantQuota{{Tenant: ""}, {Tenant: "../x"}, {Tenant: "a", MaxRows: -1}, {Tenant: "a", Weight: 1001},
		{Tenant: strings.Repeat("x", 129)}} {
		_, err := c.SetTenantQuota(ctx, bad)
		require.ErrorIs(t, err, catalog.ErrInvalid, "%+v", bad)
	}
	all, err := c.TenantQuotas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, int64(0), all[0].MaxRows) // replaced whole
	require.Equal(t, int64(10), all[0].MaxBytes)
	require.Equal(t, 3, all[0].Weight)
	require.NoError(t, c.DeleteTenantQuota(ctx, "team-a"))
	require.ErrorIs(t, c.DeleteTenantQuota(ctx, "team-a"), catalog.ErrNotFound)
}

// Usage sums a tenant's live stores (exactly its name range, not a longer tenant sharing its
// prefix) with their unmerged rows; summaries group every store and flag quotas reached.
func TestTenantUsageAndSummaries(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	for _, n := range []string{"a.1", "a.2", "a", "ab.1", "a-1", "b.1", "a.gone"} {
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, n))
		require.NoError(t, err)
	}
	_, _, err := c.CreateStore(ctx, def(catalog.KindGeneric, "a.g"))
	require.NoError(t, err)
	var stats []catalog.StoreStats
	for _, n := range []string{"a.1", "a.2", "a", "ab.1", "a-1", "b.1", "a.gone"} {
		stats = append(stats, catalog.StoreStats{Kind: catalog.KindRollout, Name: n, BaseRows: 10, Bytes: 100})
	}
	stats = append(stats, catalog.StoreStats{Kind: catalog.KindGeneric, Name: "a.g", BaseRows: 10, Bytes: 100})
	require.NoError(t, c.UpsertStoreStats(ctx, stats))
	require.NoError(t, c.UpsertShardStats(ctx, []catalog.ShardStats{
		{Kind: catalog.KindRollout, Name: "a.1", Shard: "s", PendingGenerations: 9, PendingRows: 5, PendingBytes: 50},
		{Kind: catalog.KindRollout, Name: "b.1", Shard: "s", PendingGenerations: 1, PendingRows: 1, PendingBytes: 1},
	}))
	_, err = c.SoftDeleteStore(ctx, catalog.KindRollout, "a.gone")
	require.NoError(t, err)

	u, err := c.TenantUsage(ctx, catalog.DefaultTenancy, []string{"a", "b", "zz"})
	require.NoError(t, err)
	require.Equal(t, []catalog.TenantUsage{
		{Tenant: "a", Stores: 4, Rows: 45, Bytes: 450, PendingGenerations: 9}, // a.1 a.2 a a.g
		{Tenant: "b", Stores: 1, Rows: 11, Bytes: 101, PendingGenerations: 1},
		{Tenant: "zz"},
	}, u)

	_, err = c.SetTenantQuota(ctx, catalog.TenantQuota{Tenant: "a", MaxPendingGenerations: 9})
	require.NoError(t, err)
	sums, err := c.TenantSummaries(ctx, catalog.DefaultTenancy, 8, time.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	byTenant := map[string]catalog.TenantSummary{}
	for _, s := range sums {
		byTenant[s.Tenant] = s
	}
	require.Equal(t, "a", sums[0].Tenant) // most pending first
	require.Equal(t, int64(4), byTenant["a"].Stores)
	require.Equal(t, int64(1), byTenant["a"].MergeBacklog)
	require.NotNil(t, byTenant["a"].Quota)
	require.Equal(t, "pending_generations", byTenant["a"].Quota.OverQuota(byTenant["a"].TenantUsage))
	require.Nil(t, byTenant["b"].Quota)
	require.Equal(t, int64(1), byTenant["ab"].Stores)
	require.Equal(t, int64(1), byTenant["a-1"].Stores)
}

// Candidates are shared round-robin across tenants, weighted by quota weight, whatever the
// tenants' ranks: a tenant with many high-ranked stores takes its share, not the whole list.
func TestCandidatesFairAcrossTenants(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	var stats []catalog.ShardStats
	add := func(name string, pending int) {
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, name))
		require.NoError(t, err)
		stats = append(stats, catalog.ShardStats{Kind: catalog.KindRollout, Name: name, Shard: "s", PendingGenerations: pending})
	}
	for i := range 20 {
		add(fmt.Sprintf("flood.%02d", i), 100+i) // every flood store outranks every other
	}
	for i := range 3 {
		add(fmt.Sprintf("quiet.%d", i), 10+i)
		add(fmt.Sprintf("heavy.%d", i), 10+i)
	}
	require.NoError(t, c.UpsertShardStats(ctx, stats))
	q := c.Candidates(catalog.CandidateOptions{Tenancy: catalog.DefaultTenancy})
	got, err := q.Merge(ctx, 8, 6)
	require.NoError(t, err)
	require.Equal(t, []string{"flood.19", "heavy.2", "quiet.2", "flood.18", "heavy.1", "quiet.1"}, names(got)) // ties by name

	_, err = c.SetTenantQuota(ctx, catalog.TenantQuota{Tenant: "heavy", Weight: 2})
	require.NoError(t, err)
	got, err = q.Merge(ctx, 8, 6)
	require.NoError(t, err)
	require.Equal(t, []string{"flood.19", "heavy.2", "quiet.2", "heavy.1", "flood.18", "quiet.1"}, names(got))

	// Without a tenancy the order is the rank's.
	got, err = c.MergeCandidates(ctx, 8, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"flood.19", "flood.18", "flood.17"}, names(got))
}

// A store the sweep queued is skipped until its stats are observed again or RequeueAfter passes,
// so consecutive sweeps page through a backlog.
func TestCandidatesPageThroughSweptStores(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	var stats []catalog.ShardStats
	for i := range 5 {
		name := fmt.Sprintf("s%d", i)
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, name))
		require.NoError(t, err)
		stats = append(stats, catalog.ShardStats{Kind: catalog.KindRollout, Name: name, Shard: "x", PendingGenerations: 10 + i})
	}
	require.NoError(t, c.UpsertShardStats(ctx, stats))
	q := c.Candidates(catalog.CandidateOptions{RequeueAfter: time.Hour})
	page := func() []string {
		got, err := q.Merge(ctx, 8, 2)
		require.NoError(t, err)
		refs := make([]catalog.StoreRef, len(got))
		for i, s := range got {
			refs[i] = catalog.StoreRef{Kind: s.Kind, Name: s.Name}
		}
		require.NoError(t, c.MarkSwept(ctx, refs))
		return names(got)
	}
	require.Equal(t, []string{"s4", "s3"}, page())
	require.Equal(t, []string{"s2", "s1"}, page())
	require.Equal(t, []string{"s0"}, page())
	require.Empty(t, page())
	// s4's merge ran and observed its stats: it is a candidate again (if it still needs work).
	require.NoError(t, c.UpsertStoreStats(ctx, []catalog.StoreStats{{Kind: catalog.KindRollout, Name: "s4"}}))
	require.Equal(t, []string{"s4"}, page())
	// Without paging, swept stores are queued again.
	all, err := c.Candidates(catalog.CandidateOptions{}).Merge(ctx, 8, 10)
	require.NoError(t, err)
	require.Len(t, all, 5)
	// Stats refresh pages too: a never-observed store swept once is not listed again.
	_, _, err = c.CreateStore(ctx, def(catalog.KindRollout, "never"))
	require.NoError(t, err)
	stale, err := q.StaleStats(ctx, time.Now().Add(-time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, stale, 1)
	require.NoError(t, c.MarkSwept(ctx, []catalog.StoreRef{{Kind: catalog.KindRollout, Name: "never"}}))
	stale, err = q.StaleStats(ctx, time.Now().Add(-time.Minute), 10)
	require.NoError(t, err)
	require.Empty(t, stale)
}

// Workers' rate reports: each reads the others' fresh reports for its tenants, never its own.
func TestReportAppendRates(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	o, err := c.ReportAppendRates(ctx, "w1", map[string]float64{"a": 100, "b": 0}, time.Minute)
	require.NoError(t, err)
	require.Empty(t, o)
	o, err = c.ReportAppendRates(ctx, "w2", map[string]float64{"a": 50}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, map[string]catalog.OtherAppendRate{"a": {RowsPerSecond: 100, Workers: 1}}, o)
	_, err = c.ReportAppendRates(ctx, "w3", map[string]float64{"a": 0}, time.Minute)
	require.NoError(t, err)
	o, err = c.ReportAppendRates(ctx, "w1", map[string]float64{"a": 10, "b": 5}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, map[string]catalog.OtherAppendRate{"a": {RowsPerSecond: 50, Workers: 1}}, o)
	// Reports older than fresh are of workers that stopped appending.
	time.Sleep(20 * time.Millisecond)
	o, err = c.ReportAppendRates(ctx, "w1", map[string]float64{"a": 10}, 10*time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, o)
}
