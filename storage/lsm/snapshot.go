// Snapshots: what one read sees.
//
// Ordering rule: shard manifests are read BEFORE the table manifest. A merge commits the table
// (rows + watermark) before it drops generations from the shard manifest, so whatever a reader
// misses in the shard snapshot is already in the table version it reads next. Generations at or
// below the table's watermark for their shard are already merged and skipped.
package lsm

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

// ShardSnapshot is one shard's pending (sealed, unmerged) generations, oldest first.
type ShardSnapshot struct {
	Shard       string
	Manifest    *shard.ShardManifest
	Generations []shard.Generation
}

// Snapshot is a consistent view for one read.
type Snapshot struct {
	Shards []ShardSnapshot
	Table  *table.Manifest
}

// PendingGenerations is the total across shards.
func (s *Snapshot) PendingGenerations() int {
	n := 0
	for _, sh := range s.Shards {
		n += len(sh.Generations)
	}
	return n
}

// ListShards returns the ids of every shard that ever wrote to the store.
func (s *Store) ListShards(ctx context.Context) ([]string, error) { return s.shards.ListShards(ctx) }

// snapshotConcurrency bounds how many shard manifests one snapshot checks at once: each check
// is a listing (and a read when the shard changed), so on an object store a store written by
// tens of workers would otherwise cost a read tens of round trips one after another.
const snapshotConcurrency = 16

// Snapshot reads every shard's manifest (up to snapshotConcurrency at once), then — after all of
// them, the ordering rule above — the table manifest, and applies the pending generation guard
// rails (ErrOverloaded past ReadMaxGenerations in any shard).
func (s *Store) Snapshot(ctx context.Context) (*Snapshot, error) {
	shards, err := s.ListShards(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := s.shardManifests(ctx, shards)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{}
	for i, m := range manifests {
		if m != nil {
			snap.Shards = append(snap.Shards, ShardSnapshot{Shard: shards[i], Manifest: m})
		}
	}
	if snap.Table, err = s.tbl.Latest(ctx); err != nil {
		return nil, err
	}
	total := 0
	for i := range snap.Shards {
		sh := &snap.Shards[i]
		// Generations are in Gen order, so the merged ones (at or below the watermark) are a
		// prefix: the pending ones are the rest of the manifest's slice, shared, not copied
		// (manifests and snapshots are never modified).
		wm := snap.Table.WALWatermarks[sh.Shard]
		gens := sh.Manifest.Generations
		merged := sort.Search(len(gens), func(i int) bool { return gens[i].Gen > wm })
		if merged > 0 {
			s.metrics.generationsRejected.Add(float64(merged))
		}
		sh.Generations = gens[merged:len(gens):len(gens)]
		n := len(sh.Generations)
		total += n
		if n > s.opts.ReadMaxGenerations {
			s.metrics.readsRefused.Inc()
			return nil, fmt.Errorf("%w: shard %s has %d pending generations (limit %d); a merge must catch up", ErrOverloaded, sh.Shard, n, s.opts.ReadMaxGenerations)
		}
		if n >= s.opts.ReadWarnGenerations && s.warnLimiter.Allow() {
			slog.Warn("many pending generations; reads slow down until a merge catches up",
				"store", s.opts.Name, "shard", sh.Shard, "generations", n, "refuse_at", s.opts.ReadMaxGenerations)
		}
	}
	s.metrics.pendingPerRead.Observe(float64(total))
	return snap, nil
}

// shardManifests returns the newest manifest of each shard (nil for one that has none), in the
// order of shards. Every check has returned when it does, so nothing it started reads on.
func (s *Store) shardManifests(ctx context.Context, shards []string) ([]*shard.ShardManifest, error) {
	out := make([]*shard.ShardManifest, len(shards))
	if len(shards) == 1 { // the common case: no goroutine for it
		m, err := s.shards.LatestManifest(ctx, shards[0])
		out[0] = m
		return out, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(snapshotConcurrency)
	for i, sh := range shards {
		g.Go(func() error {
			m, err := s.shards.LatestManifest(gctx, sh)
			out[i] = m // each goroutine writes only its own slot
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// SnapshotAt is a read-only checkout of base-table version v: no shard generations and no
// memtable (a checkout excludes the WAL). v = 0 means the live view (Snapshot).
func (s *Store) SnapshotAt(ctx context.Context, v uint64) (*Snapshot, error) {
	if v == 0 {
		return s.Snapshot(ctx)
	}
	m, err := s.tbl.Version(ctx, v)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Table: m}, nil
}

// GenerationKeys returns the sorted keys of pending generation g of shard sh (from its key
// file). A generation merged and removed since the snapshot that listed it is ErrVanished.
func (s *Store) GenerationKeys(ctx context.Context, sh string, g shard.Generation) ([]string, error) {
	k, err := s.shards.KeyFile(ctx, g)
	if err != nil {
		if pending, perr := s.stillPending(ctx, sh, g.Gen); perr == nil && !pending {
			return nil, fmt.Errorf("%w: generation %d of shard %s was merged: %w", ErrVanished, g.Gen, sh, err)
		}
		return nil, err
	}
	return k.Keys, nil
}
