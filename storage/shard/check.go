// Invariant checks of a shard's WAL on storage, for the model tests (run after every step) and
// for tools. Check reads everything it verifies; it is not for hot paths.
package shard

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

// CountedEntries returns every WAL entry of shard that counts, by position, as its IPC payload:
// the entry objects, and the intact frames of the segments (a listed segment up to its listed
// length; an unlisted one up to its first frame that is not intact).
func CountedEntries(ctx context.Context, objects objstore.Store, shard string) (map[uint64][]byte, error) {
	m, err := ReadManifest(ctx, objects, shard)
	if err != nil {
		return nil, err
	}
	objs, err := objstore.ListAll(ctx, objects, WALDir+shard+"/")
	if err != nil {
		return nil, err
	}
	out := map[uint64][]byte{}
	for _, o := range objs {
		if p, ok := parseNumbered(o.Key, EntryPrefix(shard), ".arrows"); ok {
			data, err := objects.Get(ctx, o.Key)
			if err != nil {
				return nil, err
			}
			out[p] = data
			continue
		}
		name, ok := strings.CutPrefix(o.Key, SegmentPrefix(shard))
		if !ok {
			continue
		}
		data, err := objects.Get(ctx, o.Key)
		if err != nil {
			return nil, err
		}
		if m != nil {
			for _, ref := range m.Segments {
				if ref.Name == name && ref.Length <= int64(len(data)) {
					data = data[:ref.Length]
				}
			}
		}
		frames, _ := scanSegment(data)
		for _, f := range frames {
			out[f.pos] = f.payload
		}
	}
	return out, nil
}

// Check verifies the invariants of shard's latest manifest against storage:
//   - generations (retained, then pending) are in increasing order, above released_through and
//     below next_generation, with ordered key bounds;
//   - each generation's key file exists, decodes, holds sorted keys within the generation's
//     bounds and as many keys as the generation's rows;
//   - an entry-backed generation's entries are at or below replay_after, and each key's row
//     location is a WAL entry that exists (an entry object, or an intact frame of a listed
//     segment at the recorded offset);
//   - listed segments exist and are intact up to their listed length;
//   - the manifest a reader finds at the shard's heads is the latest (heads.go), when the shard
//     has heads.
func Check(ctx context.Context, objects objstore.Store, shard string) error {
	m, err := ReadManifest(ctx, objects, shard)
	if err != nil || m == nil {
		return err
	}
	a := &Access{Objects: objects, manifests: newShardManifestCache(cache.Namespace{})}
	if head, err := a.highestHead(ctx, shard); err != nil {
		return err
	} else if head > 0 {
		at, err := a.ManifestAtHead(ctx, shard, head)
		if err != nil {
			return fmt.Errorf("shard %s: manifest at head %d: %w", shard, head, err)
		}
		if at == nil || at.Version != m.Version {
			return fmt.Errorf("shard %s: the manifest at head %d is not the latest, version %d", shard, head, m.Version)
		}
	}
	prev := m.ReleasedThrough // retained generations were released oldest first
	for _, g := range append(slices.Clone(m.Retained), m.Generations...) {
		if g.Gen <= prev || g.Gen >= m.NextGeneration {
			return fmt.Errorf("shard %s: generation %d out of order (previous %d, next %d)", shard, g.Gen, prev, m.NextGeneration)
		}
		prev = g.Gen
		if g.MinKey > g.MaxKey || g.MinSeq > g.MaxSeq {
			return fmt.Errorf("shard %s: generation %d has inverted bounds", shard, g.Gen)
		}
		data, err := objects.Get(ctx, g.KeysPath)
		if err != nil {
			return fmt.Errorf("shard %s: generation %d key file: %w", shard, g.Gen, err)
		}
		k, err := decodeKeys(data, g.EntryBacked())
		if err != nil {
			return fmt.Errorf("shard %s: generation %d: %w", shard, g.Gen, err)
		}
		if int64(len(k.Keys)) != g.Rows {
			return fmt.Errorf("shard %s: generation %d lists %d rows, its key file %d keys", shard, g.Gen, g.Rows, len(k.Keys))
		}
		for i, key := range k.Keys {
			if (i > 0 && k.Keys[i-1] >= key) || key < g.MinKey || key > g.MaxKey {
				return fmt.Errorf("shard %s: generation %d key %q out of order or bounds", shard, g.Gen, key)
			}
		}
		if !g.EntryBacked() {
			if _, err := objects.Stat(ctx, g.Path); err != nil {
				return fmt.Errorf("shard %s: generation %d rows file: %w", shard, g.Gen, err)
			}
			continue
		}
		if g.LastEntry > m.ReplayAfter {
			return fmt.Errorf("shard %s: generation %d holds entry %d above replay_after %d", shard, g.Gen, g.LastEntry, m.ReplayAfter)
		}
		for i, pos := range k.entries {
			if pos < g.FirstEntry || pos > g.LastEntry {
				return fmt.Errorf("shard %s: generation %d references entry %d outside %d..%d", shard, g.Gen, pos, g.FirstEntry, g.LastEntry)
			}
			if _, err := a.readEntryBytes(ctx, shard, pos, k.locs[i]); err != nil {
				return fmt.Errorf("shard %s: generation %d entry %d: %w", shard, g.Gen, pos, err)
			}
		}
	}
	for _, ref := range m.Segments {
		data, err := objects.GetRange(ctx, SegmentKey(shard, ref.Name), 0, ref.Length)
		if err != nil {
			return fmt.Errorf("shard %s: listed segment %s: %w", shard, ref.Name, err)
		}
		if _, valid := scanSegment(data); valid < ref.Length {
			return fmt.Errorf("shard %s: listed segment %s is intact up to %d of its %d listed bytes", shard, ref.Name, valid, ref.Length)
		}
	}
	return nil
}
