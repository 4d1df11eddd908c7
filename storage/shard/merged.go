// What a merge does to a shard once its rows are in the base table: drop the merged
// generations from the shard manifest (a relative edit any process may make, keeping the epoch)
// and delete what that made garbage.
package shard

import (
	"context"
	"slices"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

// DropMerged removes generations at or below gen from the shard manifest (and the WAL segments
// that no longer hold anything needed), then deletes their files, those segments and the WAL
// entries the generations held, before it returns (the merge owns these deletions). It returns how many
// generations it dropped. Both steps
// are best effort: the watermark already marks the rows merged, the next merge drops what is
// left in the manifest, and the shard writer's garbage sweep deletes what is left on storage.
func (a *Access) DropMerged(ctx context.Context, shard string, gen uint64) int {
	var dropped []Generation
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
		segGarbage = cur.dropGarbageSegments()
		return cur, nil
	})
	if err != nil || len(dropped) == 0 {
		return 0
	}
	keys := append(segmentKeys(shard, refNames(segGarbage)), obsolete...)
	var ranges [][2]uint64
	for _, g := range dropped {
		if g.Path != "" {
			keys = append(keys, g.Path)
		}
		keys = append(keys, g.KeysPath)
		cache.Remove(a.cache, g.KeysPath)
		if g.EntryBacked() {
			ranges = append(ranges, [2]uint64{g.FirstEntry, g.LastEntry})
		}
	}
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
	a.deleteObjects(ctx, shard, keys)
	return len(dropped)
}
