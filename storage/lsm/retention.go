// Retention of merged generations: a merge keeps the rows of the generations it folds into the
// table readable (as the shard's retained generations, storage/shard's merged.go) while a
// change-feed consumer or a read token still needs them, for at most Options.RetainFor; whoever
// tracks those holders (the catalog) answers Options.Holds. Releasing is oldest first, at each
// merge and at each ReleaseRetained (version cleanup runs it).
package lsm

import (
	"context"
	"log/slog"
	"time"

	"github.com/strata-store/strata/storage/shard"
)

// Holds says which merged generations of a store someone still needs.
type Holds struct {
	// Any: some consumer or read token holds the store (false: release everything merged).
	Any bool
	// Floors: per shard, the newest generation no holder needs; every generation above it is
	// kept. A shard absent here is needed from its first generation, unless OnlyListed.
	Floors map[string]uint64
	// OnlyListed: shards absent from Floors are needed by no one (read tokens name the shards
	// they read; a consumer needs every shard).
	OnlyListed bool
}

// DefaultRetainFor bounds how long a merged generation is kept for holders (Options.RetainFor).
const DefaultRetainFor = 24 * time.Hour

// retain is the rule for shard's merged generations now: kept while a holder needs it and it was
// sealed less than RetainFor ago. When the holders cannot be read, everything within RetainFor is
// kept (a consumer's rows are never released because the catalog was briefly unreachable).
func (s *Store) retain(ctx context.Context, sh string) shard.Retain {
	if s.opts.Holds == nil {
		return nil
	}
	h, err := s.opts.Holds(ctx)
	if err != nil {
		slog.Warn("cannot read who holds merged generations; keeping them", "store", s.opts.Name, "shard", sh, "err", err)
	}
	now := time.Now()
	return func(g shard.Generation) bool {
		if now.Sub(g.SealedAt) > s.opts.RetainFor {
			return false
		}
		if err != nil {
			return true
		}
		floor, listed := h.Floors[sh]
		return h.Any && (listed || !h.OnlyListed) && g.Gen > floor
	}
}

// ReleaseRetained releases, in every shard, the retained generations no holder needs any more
// (or past RetainFor), and returns how many it released.
func (s *Store) ReleaseRetained(ctx context.Context) (int, error) {
	shards, err := s.ListShards(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, sh := range shards {
		m, err := s.shards.LatestManifest(ctx, sh)
		if err != nil {
			return total, err
		}
		if m == nil || len(m.Retained) == 0 {
			continue
		}
		n, err := s.shards.ReleaseRetained(ctx, sh, s.retain(ctx, sh))
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
