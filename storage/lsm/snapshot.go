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
	"slices"
	"sort"
	"time"

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

// snapshotConcurrency bounds how many shard manifests one snapshot reads at once: on an object
// store a store written by tens of workers would otherwise cost a read tens of round trips one
// after another.
const snapshotConcurrency = 16

// Snapshot finds every shard's newest manifest (shardManifests), then — after all of them, the
// ordering rule above — reads the table manifest, and applies the pending generation guard
// rails (ErrOverloaded past ReadMaxGenerations in any shard).
func (s *Store) Snapshot(ctx context.Context) (*Snapshot, error) {
	shards, heads, err := s.shardsToRead(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := s.shardManifests(ctx, shards, heads)
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

// shardsToRead returns the shards a snapshot reads, sorted, and the highest head of each that
// has heads (storage/shard/heads.go). Usually that is one listing, of the store's heads: every
// shard written by this release has them. Once per ShardRecheckInterval — and at a store's first
// read in this process — one read (the one whose swap wins) lists the shards themselves instead
// and returns no heads, so every shard is read by listing its manifests: a backstop for a writer
// of an earlier release still running during an upgrade, whose commits write no heads. The shards
// that read finds without heads are kept and read by listing until the next recheck.
func (s *Store) shardsToRead(ctx context.Context) ([]string, map[string]uint64, error) {
	now, last := time.Now().UnixNano(), s.shardsRecheckedAt.Load()
	if now-last >= int64(s.opts.ShardRecheckInterval) && s.shardsRecheckedAt.CompareAndSwap(last, now) {
		shards, err := s.ListShards(ctx)
		if err == nil {
			var heads map[string]uint64
			if heads, err = s.shards.Heads(ctx); err == nil {
				headless := slices.DeleteFunc(slices.Clone(shards), func(sh string) bool { return heads[sh] > 0 })
				s.headlessShards.Store(&headless)
				return shards, nil, nil
			}
		}
		s.shardsRecheckedAt.Store(last) // not done: the next read tries again
		return nil, nil, err
	}
	heads, err := s.shards.Heads(ctx)
	if err != nil {
		return nil, nil, err
	}
	shards := make([]string, 0, len(heads))
	for sh := range heads {
		shards = append(shards, sh)
	}
	if headless := s.headlessShards.Load(); headless != nil {
		shards = append(shards, *headless...)
	}
	slices.Sort(shards)
	return slices.Compact(shards), heads, nil
}

// shardManifests returns the newest manifest of each shard (nil for one that has none), in the
// order of shards: for a shard with a head, the manifest at its highest head, taken from the
// process's cache when it holds that version, otherwise read (up to snapshotConcurrency at once);
// for any other, the newest a listing of its manifests finds. Every read has returned when it
// does, so nothing it started reads on.
func (s *Store) shardManifests(ctx context.Context, shards []string, heads map[string]uint64) ([]*shard.ShardManifest, error) {
	out := make([]*shard.ShardManifest, len(shards))
	var seen map[string]*shard.ShardManifest
	if p := s.seenManifests.Load(); p != nil {
		seen = *p
	}
	var misses []int
	for i, sh := range shards {
		if h := heads[sh]; h > 0 {
			if m := seen[sh]; m != nil && m.Version == h {
				out[i] = m
				continue
			}
			if m, ok := s.shards.CachedManifestAtHead(sh, h); ok {
				out[i] = m
				continue
			}
		}
		misses = append(misses, i)
	}
	defer func() { s.rememberManifests(seen, shards, out) }()
	read := func(ctx context.Context, i int) (err error) {
		// each call writes only its own slot
		if h := heads[shards[i]]; h > 0 {
			out[i], err = s.shards.ManifestAtHead(ctx, shards[i], h)
		} else {
			out[i], err = s.shards.LatestManifest(ctx, shards[i])
		}
		return err
	}
	if len(misses) <= 1 { // the common cases: no goroutine for them
		for _, i := range misses {
			if err := read(ctx, i); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(snapshotConcurrency)
	for _, i := range misses {
		g.Go(func() error { return read(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// rememberManifests replaces seenManifests with the manifests a snapshot found (out, by
// shards) when they differ from seen, the map the snapshot started from; a snapshot that fails
// leaves nils, which are not remembered.
func (s *Store) rememberManifests(seen map[string]*shard.ShardManifest, shards []string, out []*shard.ShardManifest) {
	found, same := 0, true // checked first: a read of unchanged shards allocates nothing here
	for i, sh := range shards {
		if out[i] != nil {
			found++
		}
		same = same && out[i] == seen[sh]
	}
	if same && found == len(seen) {
		return
	}
	next := make(map[string]*shard.ShardManifest, found)
	for i, sh := range shards {
		if out[i] != nil {
			next[sh] = out[i]
		}
	}
	s.seenManifests.Store(&next)
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
