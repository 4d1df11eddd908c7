// Candidates: the sweeps' work lists, read from store_stats.
//
// Each query reads one partial index in rank order (the literal "> 0" style predicates let the
// planner prove the partial index applies even for a generic prepared plan) and stops after at
// most a window of rows (scanWindow). Deleted stores are never candidates.
//
// Fair shares: the rows are then ordered round-robin across tenants (Tenancy), weighted by each
// tenant's quota weight — the first of every tenant, then the second of every tenant, a tenant of
// weight w taking w places a round — so a tenant with ten thousand stores in need of a merge gets
// its share of a sweep's requests, not all of them.
//
// Paging: a store the sweep queued (MarkSwept sets swept_at) is skipped until its maintenance
// ran — an observation of its stats (UpsertStoreStats) or a recorded cleanup clears swept_at —
// or RequeueAfter passes (by the database's clock, so workers' clocks need not agree), so
// consecutive sweeps page through a backlog larger than one sweep's cap instead of queueing the
// same top stores each time.
package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// scanWindow bounds how many rows of a candidate index one query reads before ordering them by
// tenant: candidateScanFactor times its limit (at least minScanWindow), so a query's cost follows
// what it returns, not the backlog. Fair shares hold within that window of the highest-ranked
// candidates; the paging rule moves the window through a larger backlog sweep after sweep.
const (
	candidateScanFactor = 8
	minScanWindow       = 1000
)

func scanWindow(limit int) int { return max(candidateScanFactor*limit, minScanWindow) }

// DefaultRequeueAfter: a store queued by a sweep and not observed since is queued again after
// this long (its request may have been lost with a terminated workflow).
const DefaultRequeueAfter = 10 * time.Minute

// CandidateOptions shapes the candidate queries of a Candidates handle.
type CandidateOptions struct {
	// Tenancy groups stores into tenants for fair shares (zero: every store in one tenant).
	Tenancy Tenancy
	// RequeueAfter: see the paging rule above (0: a swept store is never skipped).
	RequeueAfter time.Duration
}

// Candidates runs the sweep's candidate queries with its options. It shares the Catalog's pool.
type Candidates struct {
	c    *Catalog
	opts CandidateOptions
}

// Candidates returns the candidate queries with opts.
func (c *Catalog) Candidates(opts CandidateOptions) Candidates {
	return Candidates{c: c, opts: opts}
}

// requeueSeconds: a store swept more than this many seconds ago (by the database's clock, which
// MarkSwept also uses) is queued again even if not observed since.
func (q Candidates) requeueSeconds() float64 {
	if q.opts.RequeueAfter <= 0 {
		return -3600 // no paging: every swept store passes
	}
	return q.opts.RequeueAfter.Seconds()
}

// notSwept is the paging rule's predicate, with the requeueSeconds parameter $n.
func notSwept(n int) string {
	return fmt.Sprintf(`(s.swept_at IS NULL OR s.swept_at < now() - make_interval(secs => $%d))`, n)
}

const liveStore = `EXISTS (SELECT 1 FROM stores r WHERE r.kind = s.kind AND r.name = s.name AND r.deleted_at IS NULL)`

// query runs "SELECT … FROM store_stats s WHERE pred ORDER BY rank" with the fair-share order and
// the paging rule. pred and rank may use $1..$len(args). The live-store check runs on the rows
// returned only (a store deleted meanwhile costs the sweep a place, never a probe per scanned row).
func (q Candidates) query(ctx context.Context, what, pred, rank string, args []any, limit int) ([]StoreStats, error) {
	n := len(args)
	var sql string
	if q.opts.Tenancy.Depth <= 0 { // one tenant: the rank's order
		sql = fmt.Sprintf(`
			SELECT `+storeStatsColumns+` FROM (
				SELECT s.* FROM store_stats s
				WHERE %[1]s AND `+notSwept(n+1)+`
				ORDER BY %[2]s LIMIT $%[3]d
			) s WHERE `+liveStore+`
			ORDER BY %[2]s, s.kind, s.name`, pred, rank, n+2)
		args = append(slices.Clip(args), q.requeueSeconds(), limit)
	} else {
		sql = fmt.Sprintf(`
			SELECT `+storeStatsColumns+` FROM (
				SELECT s.*, (s.tenant_rank - 1) / COALESCE(q.weight, 1)::float8 AS tenant_round FROM (
					SELECT s.*, row_number() OVER (PARTITION BY s.tenant ORDER BY %[2]s) AS tenant_rank FROM (
						SELECT s.*, `+q.opts.Tenancy.sql("s.name", "$%[3]d")+` AS tenant
						FROM store_stats s
						WHERE %[1]s AND `+notSwept(n+2)+`
						ORDER BY %[2]s LIMIT %[4]d
					) s
				) s LEFT JOIN tenant_quotas q ON q.tenant = s.tenant
				ORDER BY tenant_round, %[2]s, s.kind, s.name
				LIMIT $%[5]d
			) s WHERE `+liveStore+`
			ORDER BY s.tenant_round, %[2]s, s.kind, s.name`,
			pred, rank, n+1, scanWindow(limit), n+3)
		sep := q.opts.Tenancy.separator()
		args = append(slices.Clip(args), sep, q.requeueSeconds(), limit)
	}
	rows, err := q.c.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, errorf("catalog: %s candidates: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StoreStats, error) { return scanStoreStats(r) })
	if err != nil {
		return nil, errorf("catalog: %s candidates: %w", what, err)
	}
	return out, nil
}

// Merge: live stores whose shards hold at least minPending sealed generations in all, most
// pending first.
func (q Candidates) Merge(ctx context.Context, minPending, limit int) ([]StoreStats, error) {
	return q.query(ctx, "merge", `s.pending_generations > 0 AND s.pending_generations >= $1`,
		`s.pending_generations DESC`, []any{minPending}, limit)
}

// StaleMerge: live stores whose oldest unmerged generation was sealed before olderThan, oldest
// first (so a quiet store with a few generations is still merged eventually).
func (q Candidates) StaleMerge(ctx context.Context, olderThan time.Time, limit int) ([]StoreStats, error) {
	return q.query(ctx, "stale merge", `s.oldest_pending_at IS NOT NULL AND s.oldest_pending_at < $1`,
		`s.oldest_pending_at`, []any{olderThan}, limit)
}

// Compact: live stores whose compaction plan (observed with their stats) would rewrite
// fragments, most such fragments first; a store whose plan is empty is never one.
func (q Candidates) Compact(ctx context.Context, limit int) ([]StoreStats, error) {
	return q.query(ctx, "compact", `s.compactable_fragments > 0`, `s.compactable_fragments DESC`, nil, limit)
}

// Index: live stores whose key index does not cover every fragment, most uncovered fragments
// first.
func (q Candidates) Index(ctx context.Context, limit int) ([]StoreStats, error) {
	return q.query(ctx, "index", `s.index_covered_fragments < s.fragments`,
		`(s.fragments - s.index_covered_fragments) DESC`, nil, limit)
}

// CleanupPolicy says which stores need a version cleanup. Garbage (GarbageBytes) is only
// deletable once it is older than the version TTL, so the garbage triggers wait a while after a
// store's last cleanup instead of queueing one that would find nothing to delete.
type CleanupPolicy struct {
	MinVersions int // the table moved this many versions past the last cleanup's
	// MinGarbageBytes: the store holds this much garbage and its last cleanup ran at least
	// VolumeInterval ago (or never).
	MinGarbageBytes int64
	VolumeInterval  time.Duration
	// GarbageRatio: the store's garbage is at least this share of its table's bytes (and at
	// least 64 KiB) and its last cleanup ran at least RatioInterval ago (or never): small stores
	// are cleaned too, once what their last cleanup had to keep has aged past the TTL.
	GarbageRatio  float64
	RatioInterval time.Duration
}

// minRatioGarbage: below this, garbage is not worth a cleanup by ratio.
const minRatioGarbage = 64 << 10

// Cleanup: live stores that need a version cleanup by policy, most garbage first, then most
// versions behind, then most garbage for their size; each store once, at most limit.
func (q Candidates) Cleanup(ctx context.Context, p CleanupPolicy, limit int) ([]StoreStats, error) {
	now := time.Now()
	byVolume, err := q.query(ctx, "cleanup", `s.dropped_bytes - s.cleaned_dropped_bytes >= $1
		AND (s.last_cleanup_at IS NULL OR s.last_cleanup_at <= $2)`,
		`(s.dropped_bytes - s.cleaned_dropped_bytes) DESC`, []any{p.MinGarbageBytes, now.Add(-p.VolumeInterval)}, limit)
	if err != nil {
		return nil, err
	}
	byVersions, err := q.query(ctx, "cleanup", `s.table_version - s.cleaned_version >= $1`,
		`(s.table_version - s.cleaned_version) DESC`, []any{p.MinVersions}, limit)
	if err != nil {
		return nil, err
	}
	var byRatio []StoreStats
	if p.GarbageRatio > 0 {
		byRatio, err = q.query(ctx, "cleanup", `s.dropped_bytes - s.cleaned_dropped_bytes >= GREATEST($1 * s.bytes, $2)
			AND (s.last_cleanup_at IS NULL OR s.last_cleanup_at <= $3)`,
			`(s.dropped_bytes - s.cleaned_dropped_bytes) DESC`, []any{p.GarbageRatio, minRatioGarbage, now.Add(-p.RatioInterval)}, limit)
		if err != nil {
			return nil, err
		}
	}
	out := byVolume
	seen := make(map[StoreRef]bool, len(out))
	for _, s := range out {
		seen[StoreRef{s.Kind, s.Name}] = true
	}
	for _, more := range [][]StoreStats{byVersions, byRatio} {
		for _, s := range more {
			if ref := (StoreRef{s.Kind, s.Name}); len(out) < limit && !seen[ref] {
				seen[ref] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// StaleStats: live stores whose stats were last observed before olderThan, or never, least
// recently observed first — the work list of the stats refresh sweep. It reads
// store_stats_updated in order (every live store has a stats row from its creation on).
func (q Candidates) StaleStats(ctx context.Context, olderThan time.Time, limit int) ([]Store, error) {
	rows, err := q.c.pool.Query(ctx, `
		SELECT `+prefixed("r.", storeColumns)+` FROM store_stats s
		JOIN stores r ON r.kind = s.kind AND r.name = s.name AND r.deleted_at IS NULL
		WHERE s.updated_at < $1
		  AND `+notSwept(3)+`
		ORDER BY s.updated_at LIMIT $2`, olderThan, limit, q.requeueSeconds())
	if err != nil {
		return nil, errorf("catalog: stale stats candidates: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Store, error) { return scanStore(r) })
	if err != nil {
		return nil, errorf("catalog: stale stats candidates: %w", err)
	}
	return out, nil
}

// StoreRef names a store.
type StoreRef struct {
	Kind Kind
	Name string
}

// MarkSwept records that the sweep queued maintenance for stores just now (the paging rule).
func (c *Catalog) MarkSwept(ctx context.Context, stores []StoreRef) error {
	if len(stores) == 0 {
		return nil
	}
	stores = slices.Clone(stores)
	slices.SortFunc(stores, func(a, b StoreRef) int {
		return strings.Compare(string(a.Kind)+"\x00"+a.Name, string(b.Kind)+"\x00"+b.Name)
	})
	stores = slices.Compact(stores)
	kinds, names := make([]string, len(stores)), make([]string, len(stores))
	for i, s := range stores {
		kinds[i], names[i] = string(s.Kind), s.Name
	}
	if _, err := c.pool.Exec(ctx, `
		UPDATE store_stats s SET swept_at = now()
		FROM unnest($1::text[], $2::text[]) AS t(k, n)
		WHERE s.kind = t.k AND s.name = t.n`, kinds, names); err != nil {
		return errorf("catalog: mark %d stores swept: %w", len(stores), err)
	}
	return nil
}

// prefixed qualifies every column of a comma-separated list with p.
func prefixed(p, columns string) string {
	parts := strings.Split(columns, ",")
	for i, col := range parts {
		parts[i] = p + strings.TrimSpace(col)
	}
	return strings.Join(parts, ", ")
}

// The Catalog's own candidate methods: one tenant, no paging (tests and tools).

// MergeCandidates is Candidates(CandidateOptions{}).Merge.
func (c *Catalog) MergeCandidates(ctx context.Context, minPending, limit int) ([]StoreStats, error) {
	return c.Candidates(CandidateOptions{}).Merge(ctx, minPending, limit)
}

// StaleMergeCandidates is Candidates(CandidateOptions{}).StaleMerge.
func (c *Catalog) StaleMergeCandidates(ctx context.Context, olderThan time.Time, limit int) ([]StoreStats, error) {
	return c.Candidates(CandidateOptions{}).StaleMerge(ctx, olderThan, limit)
}

// CompactCandidates is Candidates(CandidateOptions{}).Compact.
func (c *Catalog) CompactCandidates(ctx context.Context, limit int) ([]StoreStats, error) {
	return c.Candidates(CandidateOptions{}).Compact(ctx, limit)
}

// IndexCandidates is Candidates(CandidateOptions{}).Index.
func (c *Catalog) IndexCandidates(ctx context.Context, limit int) ([]StoreStats, error) {
	return c.Candidates(CandidateOptions{}).Index(ctx, limit)
}

// CleanupCandidates is Candidates(CandidateOptions{}).Cleanup.
func (c *Catalog) CleanupCandidates(ctx context.Context, p CleanupPolicy, limit int) ([]StoreStats, error) {
	return c.Candidates(CandidateOptions{}).Cleanup(ctx, p, limit)
}

// StaleStatsCandidates is Candidates(CandidateOptions{}).StaleStats.
func (c *Catalog) StaleStatsCandidates(ctx context.Context, olderThan time.Time, limit int) ([]Store, error) {
	return c.Candidates(CandidateOptions{}).StaleStats(ctx, olderThan, limit)
}
