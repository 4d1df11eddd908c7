// WAL entry object lifetime (segments: segmentlife.go). Since format 2 an entry holds its rows
// until the generation that references it is merged, so deletion follows one rule: an entry at
// or below the shard's replay_after that no pending generation's entry range holds is garbage.
// Seals and merges delete their own garbage by position, or after listing the entries when the
// range is wide (a shard writing segments has almost none); a claim, which lists the entries
// anyway, sweeps what a crash left.
package memwal

import (
	"context"
	"slices"

	"github.com/strata-store/strata/storage/objstore"
)

// deleteEntries removes the shard's WAL entry objects at the positions of the inclusive ranges
// (empty ranges, from > to, are skipped). Narrow ranges are deleted position by position (a
// position with no entry costs one failed delete); wide ones by listing the entries first, since
// a shard that writes WAL segments has almost no entry objects (claims' fences). The caller
// guarantees that replay and every pending generation are done with them. Best effort, detached
// from any request.
func (s *Store) deleteEntries(shard string, ranges ...[2]uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.IOTimeout)
	defer cancel()
	var width uint64
	for _, r := range ranges {
		if r[0] <= r[1] {
			width += r[1] - r[0] + 1
		}
	}
	if width > maxEntryDeletesWithoutListing {
		objs, err := objstore.ListAll(ctx, s.objects, entryPrefix(shard))
		if err != nil {
			return
		}
		for _, o := range objs {
			p, ok := parseNumbered(o.Key, entryPrefix(shard), ".arrows")
			if ok && slices.ContainsFunc(ranges, func(r [2]uint64) bool { return r[0] <= p && p <= r[1] }) {
				_ = s.objects.Delete(ctx, o.Key)
			}
		}
		return
	}
	for _, r := range ranges {
		for p := r[0]; p <= r[1] && p != 0; p++ {
			_ = s.objects.Delete(ctx, entryKey(shard, p))
		}
	}
}

// maxEntryDeletesWithoutListing: wider ranges are listed before deleting (see deleteEntries).
const maxEntryDeletesWithoutListing = 64

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
