// What a merge does to a shard once its rows are in the base table: drop the merged generations
// from the shard's pending list (a relative edit any process may make, keeping the epoch) and
// either delete their rows or keep them as retained generations, for change-feed consumers and
// read tokens that have not moved past them; and releasing retained generations later.
//
// Release rule: retained generations are released oldest first (a prefix), so everything a
// feed position or a read token needs is "every generation above some number", and
// ReleasedThrough tells a reader exactly what is gone. Each edit that releases generations
// deletes their files after it commits (it owns those deletions); the shard writer's garbage
// sweep deletes what a failed deletion left.
package shard

import (
	"context"
	"slices"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

// Retain decides whether a merged generation's rows are still needed (by a consumer or a read
// token that has not moved past it). Generations are offered oldest first; once Retain keeps one,
// every newer one is kept too. A nil Retain keeps nothing.
type Retain func(Generation) bool

// release splits gens (oldest first) into the prefix retain does not keep and the rest.
func (retain Retain) release(gens []Generation) (released, kept []Generation) {
	i := 0
	for i < len(gens) && (retain == nil || !retain(gens[i])) {
		i++
	}
	return gens[:i:i], gens[i:len(gens):len(gens)]
}

// DropMerged removes generations at or below gen from the pending list, keeping those retain
// asks for as retained generations (with the retained ones it no longer needs released), and the
// WAL segments that no longer hold anything needed; then it deletes the released generations'
// files, those segments and the WAL entries they held, before it returns (the merge owns these
// deletions). It returns how many generations it dropped from the pending list. Both steps are
// best effort: the watermark already marks the rows merged, the next merge drops what is left in
// the manifest, and the shard writer's garbage sweep deletes what is left on storage.
func (a *Access) DropMerged(ctx context.Context, shard string, gen uint64, retain Retain) int {
	var dropped, released []Generation
	var segGarbage []SegmentRef
	_, obsolete, err := UpdateManifest(ctx, a.Objects, shard, func(cur *ShardManifest) (*ShardManifest, error) {
		dropped = nil
		keep := cur.Generations[:0:0]
		for _, g := range cur.Generations {
			if g.Gen <= gen {
				dropped = append(dropped, g)
			} else {
				keep = append(keep, g)
			}
		}
		if len(dropped) == 0 {
			return nil, errStopEdit
		}
		cur.Generations = keep
		released = cur.release(append(slices.Clone(cur.Retained), dropped...), retain)
		segGarbage = cur.dropGarbageSegments()
		return cur, nil
	})
	if err != nil || len(dropped) == 0 {
		return 0
	}
	a.deleteReleased(ctx, shard, released, segGarbage, obsolete)
	return len(dropped)
}

// ReleaseRetained releases the retained generations retain no longer keeps (oldest first) and
// deletes their files; it returns how many it released.
func (a *Access) ReleaseRetained(ctx context.Context, shard string, retain Retain) (int, error) {
	var released []Generation
	var segGarbage []SegmentRef
	_, obsolete, err := UpdateManifest(ctx, a.Objects, shard, func(cur *ShardManifest) (*ShardManifest, error) {
		released = nil
		if len(cur.Retained) == 0 {
			return nil, errStopEdit
		}
		released = cur.release(cur.Retained, retain)
		if len(released) == 0 {
			return nil, errStopEdit
		}
		segGarbage = cur.dropGarbageSegments()
		return cur, nil
	})
	if err != nil || len(released) == 0 {
		return 0, err
	}
	a.deleteReleased(ctx, shard, released, segGarbage, obsolete)
	return len(released), nil
}

// release sets m's retained generations to those of merged (oldest first) that retain keeps,
// raises ReleasedThrough past the others and returns them.
func (m *ShardManifest) release(merged []Generation, retain Retain) []Generation {
	released, kept := retain.release(merged)
	m.Retained = kept
	if len(released) > 0 {
		m.ReleasedThrough = max(m.ReleasedThrough, released[len(released)-1].Gen)
	}
	return released
}

// deleteReleased deletes released generations' files, the WAL entries they held, garbage
// segments and obsolete manifest versions.
func (a *Access) deleteReleased(ctx context.Context, shard string, released []Generation, segGarbage []SegmentRef, obsolete []string) {
	keys := append(segmentKeys(shard, refNames(segGarbage)), obsolete...)
	var ranges [][2]uint64
	for _, g := range released {
		if g.Path != "" {
			keys = append(keys, g.Path)
		}
		keys = append(keys, g.KeysPath)
		cache.Remove(a.cache, g.KeysPath)
		if g.EntryBacked() {
			ranges = append(ranges, [2]uint64{g.FirstEntry, g.LastEntry})
		}
	}
	if len(ranges) > 0 {
		if entries, ok := entryKeysIn(shard, ranges...); ok {
			keys = append(keys, entries...)
		} else if listing, err := objstore.ListAll(ctx, a.Objects, EntryPrefix(shard)); err == nil {
			for _, o := range listing {
				p, ok := parseNumbered(o.Key, EntryPrefix(shard), ".arrows")
				if ok && slices.ContainsFunc(ranges, func(r [2]uint64) bool { return r[0] <= p && p <= r[1] }) {
					keys = append(keys, o.Key)
				}
			}
		}
	}
	a.deleteObjects(ctx, shard, keys)
}
