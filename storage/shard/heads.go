// Shard heads: one listing tells a reader the newest manifest version of every shard of a store,
// so a read of a store written by many workers costs one listing, not one per shard.
//
// Layout: _heads/<shard>.<20d version>, empty objects.
//
// Ordering rule (head before commit): a commit of manifest version v writes head v BEFORE its
// put-if-absent of the manifest (UpdateManifest), and the head below v is deleted only after
// that commit. For a shard whose heads are listed, with H the highest listed:
//   - every completed commit's version is at most H: its head was written before it completed,
//     and a head is deleted only once a higher version has committed (whose head came first);
//   - the newest manifest is H or H-1: the committer of H read H-1 as the newest before writing
//     head H, and a manifest is never deleted while it is within keepManifests of the newest.
//     Manifest H missing means its commit is in flight, lost its race and is being retried one
//     version up, or its committer died between the two writes (a dangling head: the next
//     commit of the shard is at version H, and repairs it).
//
// A reader therefore reads manifest H, and H-1 when H is missing and still the highest
// (ManifestAtHead): no listing of the shard but in that rare case. A shard without heads
// (written only by earlier releases) is read by listing its manifests, as before. Deletion rule:
// a head below its shard's highest may be deleted by anyone (a commit deletes the one it
// superseded; a writer's garbage sweep the rest); the highest never, since it may be a commit in
// flight. A dangling head costs every read of the store one read that misses and one listing of
// that shard's heads, until the shard's next commit repairs it: its writer's next claim or seal,
// or RepairHead, which every merge of the store runs.
package shard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-store/strata/storage/objstore"
)

const headsDir = "_heads/"

// headKey is the key of shard's head for manifest version v.
func headKey(shard string, v uint64) string { return fmt.Sprintf("%s%s.%020d", headsDir, shard, v) }

// headPrefix is the prefix of shard's heads.
func headPrefix(shard string) string { return headsDir + shard + "." }

// parseHead splits a head's key into its shard and version.
func parseHead(key string) (shard string, v uint64, ok bool) {
	name, ok := strings.CutPrefix(key, headsDir)
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || len(name)-i-1 != 20 {
		return "", 0, false
	}
	v, err := strconv.ParseUint(name[i+1:], 10, 64)
	return name[:i], v, err == nil && v > 0
}

// Heads returns the highest head of every shard of the store that has one, from one listing.
func (a *Access) Heads(ctx context.Context) (map[string]uint64, error) {
	keys, err := objstore.ListAllKeys(ctx, a.Objects, headsDir)
	if err != nil {
		return nil, err
	}
	return highestHeads(keys), nil
}

// highestHeads returns the highest of the heads among keys, by shard (other keys are ignored).
func highestHeads(keys []string) map[string]uint64 {
	highest := make(map[string]uint64, len(keys))
	for _, key := range keys {
		if shard, v, ok := parseHead(key); ok && v > highest[shard] {
			highest[shard] = v
		}
	}
	return highest
}

// CachedManifestAtHead returns shard's manifest version head when the process's manifest cache
// holds it (no I/O): ManifestAtHead's answer whenever that version is there.
func (a *Access) CachedManifestAtHead(shard string, head uint64) (*ShardManifest, bool) {
	return a.manifests.Get(ManifestKey(shard, head))
}

// ManifestAtHead returns shard's newest manifest given head, the highest of its heads listed
// (see the ordering rule above): manifest head, or else head-1. Manifest head can be missing for
// two reasons: its commit is in flight or dangling (then head is still the shard's highest and
// head-1 is the newest completed), or commits went on past keepManifests since the listing and
// deleted it (then a higher head is there, and the read starts again from it). So a miss lists
// the shard's heads again before it reads head-1.
func (a *Access) ManifestAtHead(ctx context.Context, shard string, head uint64) (*ShardManifest, error) {
	for attempt := 0; attempt < 64; attempt++ {
		m, err := readShardManifest(ctx, a.Objects, shard, head, a.manifests)
		if !errors.Is(err, objstore.ErrNotFound) {
			return m, err
		}
		highest, err := a.highestHead(ctx, shard)
		if err != nil {
			return nil, err
		}
		if highest > head {
			head = highest
			continue
		}
		if head == 1 {
			return nil, nil // the shard's first commit is in flight or dangling
		}
		m, err = readShardManifest(ctx, a.Objects, shard, head-1, a.manifests)
		if !errors.Is(err, objstore.ErrNotFound) {
			return m, err
		}
		// Deleted since the listing: commits went on past it; the next listing finds them.
	}
	return a.LatestManifest(ctx, shard)
}

// RepairHead repairs a dangling head: when head, the highest head listed for shard, names a
// manifest that is not there and is still the highest, it commits the latest manifest unchanged
// as version head (a relative edit anyone may make; should the head's own commit land first, the
// edit finds nothing to do). It reports whether it committed. Whoever runs it deletes what the
// commit made obsolete. Safe whatever races it: an in-flight commit and the repair are two
// commits of one version, and the loser re-applies its edit one version up.
func (a *Access) RepairHead(ctx context.Context, shard string, head uint64) (bool, error) {
	if _, ok := a.CachedManifestAtHead(shard, head); ok {
		return false, nil
	}
	if _, err := readShardManifest(ctx, a.Objects, shard, head, a.manifests); !errors.Is(err, objstore.ErrNotFound) {
		return false, err // there (nothing to repair), or unreadable
	}
	highest, err := a.highestHead(ctx, shard)
	if err != nil || highest != head {
		return false, err // a newer head: commits went on
	}
	committed := false
	_, obsolete, err := UpdateManifest(ctx, a.Objects, shard, func(cur *ShardManifest) (*ShardManifest, error) {
		if committed = cur.Version < head; !committed {
			return nil, errStopEdit // the head's own commit, or another repair, landed first
		}
		return cur, nil
	})
	if err != nil {
		return false, err
	}
	a.deleteObjects(ctx, shard, obsolete)
	return committed, nil
}

// highestHead returns the highest head of shard (0: none), from a listing of its heads.
func (a *Access) highestHead(ctx context.Context, shard string) (uint64, error) {
	keys, err := objstore.ListAllKeys(ctx, a.Objects, headPrefix(shard))
	if err != nil {
		return 0, err
	}
	return highestHeads(keys)[shard], nil
}

// headsBelow returns the keys of the heads among keys that are below their shard's highest: the
// ones a sweep may delete (see the deletion rule above). Pure: no I/O.
func headsBelow(keys []string) []string {
	highest := highestHeads(keys)
	var out []string
	for _, key := range keys {
		if shard, v, ok := parseHead(key); ok && v < highest[shard] {
			out = append(out, key)
		}
	}
	return out
}
