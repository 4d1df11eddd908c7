// Package activities holds the Temporal activities that do Strata's maintenance work against
// storage and the catalog. Every activity is idempotent under retries: each storage step commits
// by compare-and-swap on a manifest, so a retried or duplicated attempt finds the work done.
//
// Long activities heartbeat while they make progress, with details a person reads in the
// Temporal UI (phase, shard, reserved_bytes, waiting_for_budget, generations_read, rows_merged,
// storage calls and bytes); one that stops making progress is abandoned (heartbeat.go). Merge memory
// is reserved from the process budget inside the activity — while it waits, it keeps
// heartbeating — and released on success, failure, cancellation and heartbeat timeout (the
// reservation lives only inside the activity's call).
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/fairshare"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/workflows"
)

// Phase is what a maintenance job is doing, as its heartbeat details show it (a merge reports
// its own steps: lsm.Phase, the same words).
type Phase string

const (
	PhaseIndexing         = Phase(lsm.PhaseIndexing)
	PhaseCompacting       = Phase(lsm.PhaseCompacting)
	PhaseCleaning   Phase = "cleaning"
	PhaseStats      Phase = "stats"
	// Registry cleanup's steps.
	PhasePurging     Phase = "purging"      // a deleted store's data (Store names it)
	PhaseOrphans     Phase = "orphans"      // adopting unregistered directories (Store names the kind)
	PhaseQuietShards Phase = "quiet shards" // sealing shards no process wrote to lately
)

// DefaultStallTimeout is how long an activity may go without progress before its attempt is
// abandoned as stalled (below the workflow's heartbeat timeout, so the activity reports why).
const DefaultStallTimeout = 45 * time.Second

// Activities are the maintenance activities; register them on the maintenance worker.
type Activities struct {
	Stores            *storecache.Manager
	Request           Requester     // queues maintenance requests (the sweep's output)
	HeartbeatInterval time.Duration // default 5s
	StallTimeout      time.Duration // default DefaultStallTimeout
	Merge             lsm.MergeOptions
	Compaction        table.CompactionConfig
	// VectorIndexMinRows: a context store's fragment with fewer live rows is searched exactly,
	// not indexed (0: the table's default, 1,000).
	VectorIndexMinRows int64
	Cleanup            table.CleanupOptions
	Metrics            *Metrics // maintenance outcome metrics (nil: not counted)
	// SearchAttributes: the namespace has Strata's search attributes (the worker registered or
	// found them), so store workflows may set them.
	SearchAttributes bool
	// Slots, when set, admits store activities by their tenant's weighted fair share (Tenancy
	// groups stores; weights are the tenants' quota weights): see fairslots.go.
	Slots   *fairshare.Slots
	Tenancy catalog.Tenancy
	weights tenantWeights
}

// open acquires the store; a store that is not registered (deleted) is non-retryable.
func (a *Activities) open(ctx context.Context, ref workflows.StoreRef) (*lsm.Store, func(), error) {
	if !ref.Kind.Valid() {
		err := fmt.Errorf("%w: unknown store kind %q", catalog.ErrInvalid, ref.Kind)
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrStoreGone, err)
	}
	s, release, err := a.Stores.Acquire(ctx, ref.Kind, ref.Name)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("store %s/%s does not exist", ref.Kind, ref.Name), workflows.ErrStoreGone, err)
	}
	return s, release, err
}

// withStore acquires the store and runs fn under the progress watchdog (heartbeat.go), starting
// in phase; the error it returns is classified (errors.go). Opening the store and fn run in a
// goroutine of their own that owns the store's reference: when the watchdog abandons a stalled
// attempt (a storage call hung while opening or working), that goroutine releases the store once
// its hung call returns.
func (a *Activities) withStore(ctx context.Context, in workflows.ActivityInput, phase Phase,
	fn func(ctx context.Context, s *lsm.Store, hb *heartbeater) (workflows.ActivityResult, error)) (res workflows.ActivityResult, err error) {
	start := time.Now()
	defer func() { a.Metrics.observe(ctx, start, err) }()
	hb, work := a.startHeartbeats(ctx, phase)
	type outcome struct {
		res workflows.ActivityResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		freeSlot, err := a.acquireSlot(work, in.Store, hb)
		if err != nil {
			done <- outcome{err: err}
			return
		}
		defer freeSlot()
		s, release, err := a.open(work, in.Store)
		if err != nil {
			done <- outcome{err: err}
			return
		}
		defer release()
		r, err := fn(work, s, hb)
		done <- outcome{r, err}
	}()
	var out outcome
	select {
	case out = <-done:
	case <-hb.stalled:
		abandoned := true
		select {
		case out = <-done:
			abandoned = false
		case <-time.After(abandonGrace):
		}
		switch {
		case abandoned:
			out.err = errStalled
		case out.err != nil: // what the cancelled work says is a consequence: the attempt stalled
			out.err = fmt.Errorf("%w (then: %v)", errStalled, out.err)
		}
	case <-ctx.Done(): // cancelled (the worker stops, the server timed the attempt out)
		select {
		case out = <-done:
		case <-time.After(abandonGrace): // work deaf to its context: leave it to finish on its own
			out.err = ctx.Err()
		}
	}
	hb.close()
	err = classify(ctx, in, out.err)
	a.recordRun(ctx, in, start, out.res, err)
	return out.res, err
}

// recordRun appends the attempt to the store's maintenance history in the catalog. A catalog
// error is logged, not returned: the history is for people, the workflow's is the record.
func (a *Activities) recordRun(ctx context.Context, in workflows.ActivityInput, start time.Time, res workflows.ActivityResult, err error) {
	run := catalog.MaintenanceRun{Kind: in.Store.Kind, Name: in.Store.Name, Op: string(in.Request.Op), StartedAt: start,
		FinishedAt: time.Now(), Outcome: catalog.RunOK}
	if err != nil {
		run.Outcome, run.Detail = catalog.RunFailed, err.Error()
	} else if b, jerr := json.Marshal(res); jerr == nil {
		run.Detail = string(b)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if rerr := a.Stores.Catalog().RecordRun(rctx, run); rerr != nil {
		activity.GetLogger(ctx).Warn("recording a maintenance run in the catalog failed", "kind", in.Store.Kind, "name", in.Store.Name, "op", in.Request.Op, "err", rerr)
	}
}

// MergeWAL folds every shard's sealed generations into the base table (the store builds the key
// index first when it does not cover the table: index before merge; a context store's new
// fragments get their vector and full-text indexes after it).
func (a *Activities) MergeWAL(ctx context.Context, in workflows.ActivityInput) (workflows.ActivityResult, error) {
	// A merge starts with the key index (checked, and built when it does not cover the table).
	return a.withStore(ctx, in, PhaseIndexing, func(ctx context.Context, s *lsm.Store, hb *heartbeater) (workflows.ActivityResult, error) {
		var res workflows.ActivityResult
		opts := mergeOptionsFor(a.Merge, a.Compaction)
		var merged int // generations merged by the passes before this one
		opts.OnProgress = func(p lsm.Progress) {
			hb.set(func(d *HeartbeatDetails) {
				d.apply(p)
				d.GenerationsRead = merged + p.GenerationsRead
				if p.Phase == lsm.PhaseDone {
					merged += p.GenerationsRead
					d.RowsMerged += p.RowsMerged
					d.ReservedBytes = 0
				}
			})
		}
		opts.BetweenPasses = hb.yieldSlot
		sum, err := s.Merge(ctx, opts, in.Request.MaxPasses)
		res.GenerationsMerged, res.RowsMerged = sum.Generations, sum.Rows
		if err != nil {
			return res, err
		}
		if res.VectorIndexesBuilt, res.TextIndexesBuilt, err = a.indexForSearch(ctx, in.Store, s, hb); err != nil {
			return res, err
		}
		hb.set(func(d *HeartbeatDetails) { d.Phase = PhaseStats })
		res.TableVersion, err = a.refresh(ctx, in.Store, s)
		return res, err
	})
}

// BuildKeyIndex makes the key index cover every fragment (and, for a context store, builds the
// vector and full-text indexes its fragments lack).
func (a *Activities) BuildKeyIndex(ctx context.Context, in workflows.ActivityInput) (workflows.ActivityResult, error) {
	return a.withStore(ctx, in, PhaseIndexing, func(ctx context.Context, s *lsm.Store, hb *heartbeater) (workflows.ActivityResult, error) {
		if _, err := s.BuildKeyIndex(ctx); err != nil {
			return workflows.ActivityResult{}, err
		}
		vectors, texts, err := a.indexForSearch(ctx, in.Store, s, hb)
		if err != nil {
			return workflows.ActivityResult{}, err
		}
		v, err := a.refresh(ctx, in.Store, s)
		return workflows.ActivityResult{TableVersion: v, VectorIndexesBuilt: vectors, TextIndexesBuilt: texts}, err
	})
}

// Compact compacts the base table and extends the key index over anything left uncovered (and,
// for a context store, builds the search indexes of the fragments it wrote).
func (a *Activities) Compact(ctx context.Context, in workflows.ActivityInput) (workflows.ActivityResult, error) {
	return a.withStore(ctx, in, PhaseCompacting, func(ctx context.Context, s *lsm.Store, hb *heartbeater) (workflows.ActivityResult, error) {
		r, err := s.Compact(ctx, lsm.CompactOptions{Compaction: a.Compaction.With(in.Request.Overrides),
			// Waiting for merge memory is not a stall (the watchdog spares it), and the
			// details show what the compaction holds.
			OnProgress: func(p lsm.Progress) { hb.set(func(d *HeartbeatDetails) { d.apply(p) }) }})
		if err != nil {
			return workflows.ActivityResult{}, err
		}
		vectors, texts, err := a.indexForSearch(ctx, in.Store, s, hb)
		if err != nil {
			return workflows.ActivityResult{}, err
		}
		v, err := a.refresh(ctx, in.Store, s)
		return workflows.ActivityResult{FragmentsRemoved: r.FragmentsRemoved, FragmentsAdded: r.FragmentsAdded,
			FilesRemoved: r.FilesRemoved, FilesAdded: r.FilesAdded, TableVersion: v, VectorIndexesBuilt: vectors, TextIndexesBuilt: texts}, err
	})
}

// mergeOptionsFor is the worker's merge options with the compaction's target as the row count
// under which a merge writes its fragment uncompressed (compaction compresses it with its tier),
// unless the options set their own.
func mergeOptionsFor(opts lsm.MergeOptions, compaction table.CompactionConfig) lsm.MergeOptions {
	if opts.UncompressedBelowRows == 0 {
		opts.UncompressedBelowRows = compaction.TargetRowsPerFragment // 0: lsm's default, the compaction's
	}
	return opts
}

// CleanupVersions deletes expired versions and unreferenced files (resumable: it deletes as it goes).
func (a *Activities) CleanupVersions(ctx context.Context, in workflows.ActivityInput) (workflows.ActivityResult, error) {
	return a.withStore(ctx, in, PhaseCleaning, func(ctx context.Context, s *lsm.Store, _ *heartbeater) (workflows.ActivityResult, error) {
		version, err := s.LatestTableVersion(ctx)
		if err != nil {
			return workflows.ActivityResult{}, err
		}
		// Table versions that live read tokens name are kept, and merged generations nobody
		// holds any more are released.
		_, keep, err := storecache.StoreHolds(ctx, a.Stores.Catalog(), in.Store.Kind, in.Store.Name, a.Stores.RetainFor())
		if err != nil {
			return workflows.ActivityResult{}, err
		}
		opts := a.Cleanup
		opts.Keep = keep
		r, err := s.CleanupVersions(ctx, opts)
		if err != nil {
			return workflows.ActivityResult{}, err
		}
		released, err := s.ReleaseRetained(ctx)
		if err != nil {
			return workflows.ActivityResult{}, err
		}
		// The sweep queues the next cleanup once the table has moved on again from here, or
		// holds garbage again past what this cleanup left.
		if err := a.Stores.Catalog().RecordCleanup(ctx, in.Store.Kind, in.Store.Name, int64(version),
			int64(r.RetainedDroppedBytes)); err != nil {
			return workflows.ActivityResult{}, err
		}
		return workflows.ActivityResult{VersionsDeleted: r.VersionsDeleted, FilesDeleted: r.FilesDeleted, BytesDeleted: r.BytesDeleted,
			GenerationsReleased: released}, nil
	})
}

// StatsRefresh observes the store's table and shards and upserts its catalog stats.
func (a *Activities) StatsRefresh(ctx context.Context, in workflows.ActivityInput) (workflows.ActivityResult, error) {
	return a.withStore(ctx, in, PhaseStats, func(ctx context.Context, s *lsm.Store, _ *heartbeater) (workflows.ActivityResult, error) {
		v, err := a.refresh(ctx, in.Store, s)
		return workflows.ActivityResult{TableVersion: v}, err
	})
}

// refresh writes the store's table and shard stats to the catalog; it returns the table version.
func (a *Activities) refresh(ctx context.Context, ref workflows.StoreRef, s *lsm.Store) (uint64, error) {
	// What a compaction would do now is judged by the config the Compact activity uses: a store
	// whose plan is empty is never queued for compaction.
	st, err := s.Stats(ctx, a.Compaction)
	if err != nil {
		return 0, err
	}
	uncovered, err := a.searchUncovered(ctx, ref, s)
	if err != nil {
		return st.TableVersion, err
	}
	st.IndexCoveredFragments = max(0, st.IndexCoveredFragments-uncovered)
	row := catalog.StoreStats{Kind: ref.Kind, Name: ref.Name, TableVersion: int64(st.TableVersion), BaseRows: st.Rows,
		Fragments: st.Fragments, DeletedRows: st.DeletedRows, Bytes: st.Bytes, IndexCoveredFragments: st.IndexCoveredFragments,
		LastMergeAt: st.LastMergeAt, LastCompactAt: st.LastCompactAt, LastIndexAt: st.LastIndexAt,
		MergesTotal: int64(st.Merges), CompactionsTotal: int64(st.Compactions), DroppedBytes: int64(st.DroppedBytes),
		CompactableFragments: st.CompactableFragments}
	if err := a.Stores.Catalog().UpsertStoreStats(ctx, []catalog.StoreStats{row}); err != nil {
		return st.TableVersion, err
	}
	var shards []catalog.ShardStats
	for _, sh := range st.Shards {
		shards = append(shards, storecache.ShardStats(ref.Kind, ref.Name, sh))
	}
	return st.TableVersion, a.Stores.Catalog().UpsertShardStats(ctx, shards)
}
