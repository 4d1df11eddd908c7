// WAL entry lifetime. Since format 2 an entry holds its rows until the generation that
// references it is merged, so deletion follows one rule: an entry at or below the shard's
// replay_after that no pending generation's entry range holds is garbage. Seals and merges
// delete their own garbage by position (no listing of a directory that holds every pending
// generation's entries); a claim, which lists the entries anyway, sweeps what a crash left.
package memwal

import (
	"context"

	"github.com/strata-store/strata/storage/objstore"
)

// deleteEntries removes the shard's WAL entries at the positions of the inclusive ranges (empty
// ranges, from > to, are skipped; positions with no entry cost one failed delete). The caller
// guarantees that replay and every pending generation are done with them. Best effort, detached
// from any request.
func (s *Store) deleteEntries(shard string, ranges ...[2]uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.IOTimeout)
	defer cancel()
	for _, r := range ranges {
		for p := r[0]; p <= r[1] && p != 0; p++ {
			_ = s.objects.Delete(ctx, entryKey(shard, p))
		}
	}
}

// deleteUnreferencedEntries removes, among objs (a listing of the shard's entries), those that
// replay no longer needs and no generation of m holds: at or below m's replay_after and outside
// every format 2 generation's entry range. A claim runs it once, for what a crash left behind;
// seals and merges delete their own garbage by position. Safe with a stale m: generations sealed
// after m hold only positions above m's replay_after. Best effort.
func (s *Store) deleteUnreferencedEntries(shard string, m *ShardManifest, objs []objstore.ObjectInfo) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.IOTimeout)
	defer cancel()
	for _, o := range objs {
		p, ok := parseNumbered(o.Key, entryPrefix(shard), ".arrows")
		if !ok || p > m.ReplayAfter {
			continue
		}
		held := false
		for _, g := range m.Generations {
			if g.holdsEntry(p) {
				held = true
				break
			}
		}
		if !held {
			_ = s.objects.Delete(ctx, o.Key)
		}
	}
}
