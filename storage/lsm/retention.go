// Retention of merged generations: a merge keeps the rows of the generations it folds into the
// table readable (as the shard's retained generations, storage/shard's merged.go) while a
// change-feed consumer (for at most Options.RetainFor) or a read token (until it expires) still
// needs them; whoever
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
	// Consumers: some change-feed consumer holds the store; Floors are their positions: per
	// shard, the newest generation no consumer needs (a shard absent: every generation is
	// needed). What consumers hold is kept for at most Options.RetainFor after its seal.
	Consumers bool
	Floors    map[string]uint64
	// Pinned: per shard, the newest generation no read token needs, for the shards tokens read:
	// kept whatever its age (a token's own expiry bounds it).
	Pinned map[string]uint64
}

// DefaultRetainFor bounds how long a merged generation is kept for consumers (Options.RetainFor).
const DefaultRetainFor = 24 * time.Hour

// retain is the rule for shard's merged generations now (retainRule with the holders read now).
func (s *Store) retain(ctx context.Context, sh string) shard.Retain {
	if s.opts.Holds == nil {
		return nil
	}
	return s.retainRule(ctx)(sh)
}

// retainRule reads the holders once and returns the rule for each shard's merged generations:
// kept while a read token needs it, or a consumer needs it and it was sealed less than RetainFor
// ago. When the holders cannot be read, everything is kept (nobody's rows are released because
// the catalog was briefly unreachable; the next merge or cleanup after it answers releases
// them). Generations are offered oldest first and seal times grow with generation numbers, so
// what a rule keeps is a suffix.
func (s *Store) retainRule(ctx context.Context) func(sh string) shard.Retain {
	h, err := s.opts.Holds(ctx)
	if err != nil {
		slog.Warn("cannot read who holds merged generations; keeping them", "store", s.opts.Name, "err", err)
		return func(string) shard.Retain { return func(shard.Generation) bool { return true } }
	}
	now := time.Now()
	return func(sh string) shard.Retain {
		pinned, pinnedOK := h.Pinned[sh]
		return func(g shard.Generation) bool {
			if pinnedOK && g.Gen > pinned {
				return true
			}
			return h.Consumers && now.Sub(g.SealedAt) <= s.opts.RetainFor && g.Gen > h.Floors[sh]
		}
	}
}

// ReleaseRetained releases, in every shard, the retained generations no holder needs any more
// (or past RetainFor), and returns how many it released. The holders are read once, and only
// when some shard retains anything.
func (s *Store) ReleaseRetained(ctx context.Context) (int, error) {
	shards, err := s.ListShards(ctx)
	if err != nil {
		return 0, err
	}
	manifests, err := s.shardManifests(ctx, shards, nil)
	if err != nil {
		return 0, err
	}
	var rule func(string) shard.Retain
	total := 0
	for i, sh := range shards {
		if m := manifests[i]; m == nil || len(m.Retained) == 0 {
			continue
		}
		if rule == nil {
			rule = func(string) shard.Retain { return nil } // nobody is known to hold anything
			if s.opts.Holds != nil {
				rule = s.retainRule(ctx)
			}
		}
		n, err := s.shards.ReleaseRetained(ctx, sh, rule(sh))
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
