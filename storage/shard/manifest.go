// Shard manifests: a chain of small JSON documents per shard, version v+1 created with
// put-if-absent on top of v (that write is the commit). The latest version is found by listing
// the shard's manifest directory, which stays small: after each commit, versions more than
// keepManifests behind are deleted. A reader lists only the versions after the newest it has
// seen (newestShardManifest).
//
// Ownership rule: only the writer holding the shard's current epoch adds generations; anyone
// (a merge in any process) may remove merged generations, as a relative edit that keeps the
// epoch. Every edit is re-applied to the latest manifest when a commit loses the race.
package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

// keepManifests is how many recent shard manifest versions survive each commit.
const keepManifests = 4

// Generation is one sealed, immutable generation of a shard. Format 2 (entry-backed): its rows
// stay in the shard's WAL entries FirstEntry..LastEntry, which live until the generation is
// merged, and its key file says where each key's row is. Format 1 (Path set, earlier releases):
// its rows are in the Arrow IPC file at Path.
type Generation struct {
	Gen        uint64    `json:"generation"`
	Path       string    `json:"path,omitempty"`
	KeysPath   string    `json:"keys_path"`
	FirstEntry uint64    `json:"first_entry,omitempty"`
	LastEntry  uint64    `json:"last_entry,omitempty"`
	Rows       int64     `json:"rows"`  // keys (one row each, the newest)
	Bytes      int64     `json:"bytes"` // max(rows in memory, entries encoded); format 1: its file
	MinSeq     uint64    `json:"min_seq"`
	MaxSeq     uint64    `json:"max_seq"`
	MinKey     string    `json:"min_key"`
	MaxKey     string    `json:"max_key"`
	SealedAt   time.Time `json:"sealed_at"`
}

// EntryBacked reports a format 2 generation (its rows live in the shard's WAL entries).
func (g Generation) EntryBacked() bool { return g.Path == "" }

// holdsEntry reports whether the WAL entry at pos belongs to the generation (format 2).
func (g Generation) holdsEntry(pos uint64) bool {
	return g.EntryBacked() && g.FirstEntry <= pos && pos <= g.LastEntry
}

// holdsRows reports whether any listed generation (pending or retained) holds the WAL entry at
// pos: such an entry, and the segment holding it, are not garbage.
func (m *ShardManifest) holdsRows(pos uint64) bool {
	return slices.ContainsFunc(m.Generations, func(g Generation) bool { return g.holdsEntry(pos) }) ||
		slices.ContainsFunc(m.Retained, func(g Generation) bool { return g.holdsEntry(pos) })
}

// ListedGenerations calls fn for every generation whose rows are readable: the retained ones, then
// the pending ones.
func (m *ShardManifest) ListedGenerations(fn func(Generation)) {
	for _, g := range m.Retained {
		fn(g)
	}
	for _, g := range m.Generations {
		fn(g)
	}
}

// ShardManifest is one version of a shard's state.
type ShardManifest struct {
	Version        uint64       `json:"version"`
	Shard          string       `json:"shard"`
	Instance       string       `json:"instance"`
	Epoch          uint64       `json:"epoch"`
	NextGeneration uint64       `json:"next_generation"`
	ReplayAfter    uint64       `json:"replay_after"` // WAL entries at or below this position are sealed
	Generations    []Generation `json:"generations"`  // oldest first
	// Retained lists merged generations whose rows are kept readable (key files, WAL entries and
	// the segments holding them) for change-feed consumers and read tokens that still need them
	// (see retained.go); oldest first, every one older than the oldest in Generations. They are
	// released oldest first, so ReleasedThrough and Retained together say what is still there.
	Retained []Generation `json:"retained,omitempty"`
	// ReleasedThrough: generations at or below it that are not listed are gone (merged, their
	// rows only in the base table now). A change-feed position below it cannot be resumed.
	ReleasedThrough uint64 `json:"released_through,omitempty"`
	// Segments lists the shard's closed WAL segments (see segmentlife.go): a segment is read only
	// up to its Length. A segment of an epoch below SegmentsClosedBelow that is not listed was
	// created by a fenced writer after the claim that closed its epoch: nothing in it counts.
	Segments            []SegmentRef `json:"segments,omitempty"`
	SegmentsClosedBelow uint64       `json:"segments_closed_below,omitempty"`
	// UncheckedWindow is the epoch's writer's promise to the next claimer: it writes at most this
	// many WAL entry objects at once, at consecutive positions, and acknowledges one without
	// re-reading the manifest only when it wrote every one of the window's positions below it
	// (0: it re-reads the manifest after every write). The next claim fences accordingly
	// (claim.go); at most maxUncheckedWindow. A claim records the larger of its writer's promise
	// and the previous one (a claim that fails before placing its fences leaves the previous
	// writer unfenced); a writer's last seal at Close sets 0.
	UncheckedWindow uint64    `json:"unchecked_window,omitempty"`
	UpdatedAt       time.Time `json:"updated_at"`
	// RecentCommits holds random ids of the commits of this version and of up to
	// recentCommitIDs-1 versions before it, oldest first (the last is this version's): a
	// committer checks with them that its commit is on the chain (verifyOnChain). Versions
	// committed by earlier releases have none.
	RecentCommits []string `json:"recent_commits,omitempty"`
}

// recentCommitIDs is how many commits' ids a manifest carries: a commit is verified as long as
// fewer commits than that went past it before its committer looked.
const recentCommitIDs = 64

// newCommitID returns a random commit id: 32 bits, so that 64 of them stay small; two commits of
// the same version share one with a chance of one in four billion.
func newCommitID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// commitID returns the id of version v's commit as m (a version at or above v) records it, or
// "" when m's ids do not reach back to v.
func (m *ShardManifest) commitID(v uint64) string {
	back := m.Version - v
	if v > m.Version || back >= uint64(len(m.RecentCommits)) {
		return ""
	}
	return m.RecentCommits[uint64(len(m.RecentCommits))-1-back]
}

// maxUncheckedWindow bounds UncheckedWindow: a writer allowed more groups in flight re-reads the
// manifest after every write, and a claim refuses a manifest that promises more (it would have to
// place that many fences).
const maxUncheckedWindow = 64

// SegmentRef describes a closed WAL segment: its frames up to Length are the valid ones, and
// they hold positions First..Last (Last 0: none).
type SegmentRef struct {
	Name   string `json:"name"`
	First  uint64 `json:"first"`
	Last   uint64 `json:"last"`
	Length int64  `json:"length"`
}

func (m *ShardManifest) clone() *ShardManifest {
	c := *m
	c.Generations = append([]Generation(nil), m.Generations...)
	c.Retained = append([]Generation(nil), m.Retained...)
	c.Segments = append([]SegmentRef(nil), m.Segments...)
	return &c
}

// manifestCache holds decoded shard manifests by object key (each version is immutable).
type manifestCache interface {
	Get(key string) (*ShardManifest, bool)
	Add(key string, m *ShardManifest) bool
}

// shardManifestCache is a store's view of the object cache for shard manifests. Only the newest
// version of each shard seen is kept: adding a newer one drops the one before (every version is
// immutable, but only the newest is read again).
type shardManifestCache struct {
	ns     cache.Namespace
	mu     sync.Mutex        // guards newest
	newest map[string]string // shard -> the key of its newest manifest cached
}

func newShardManifestCache(ns cache.Namespace) *shardManifestCache {
	return &shardManifestCache{ns: ns, newest: map[string]string{}}
}

func (c *shardManifestCache) Get(key string) (*ShardManifest, bool) {
	return cache.Get[*ShardManifest](c.ns, "shard_manifest", key)
}

func (c *shardManifestCache) Add(key string, m *ShardManifest) bool {
	cache.Add(c.ns, "shard_manifest", key, m, int64(512+256*(len(m.Generations)+len(m.Retained))+128*len(m.Segments)))
	c.mu.Lock()
	prev := c.newest[m.Shard]
	if prev == "" || manifestVersionOf(prev) < manifestVersionOf(key) {
		c.newest[m.Shard] = key
	} else {
		prev = ""
	}
	c.mu.Unlock()
	if prev != "" && prev != key {
		cache.Remove(c.ns, prev)
	}
	return false
}

// newestVersion is the newest version of shard's manifest this cache has been given (0: none),
// whether or not the manifest itself is still cached.
func (c *shardManifestCache) newestVersion(shard string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return manifestVersionOf(c.newest[shard])
}

// manifestVersionOf is the version in a shard manifest's key (0 when it has none).
func manifestVersionOf(key string) uint64 {
	i := strings.LastIndexByte(key, '/')
	v, _ := strconv.ParseUint(strings.TrimSuffix(key[i+1:], ".json"), 10, 64)
	return v
}

// latestShardManifest returns the newest manifest of shard, or nil when the shard has none, and
// every version present. With a cache, an unchanged shard costs one listing and no read.
func latestShardManifest(ctx context.Context, store objstore.Store, shard string, cache ...manifestCache) (*ShardManifest, []uint64, error) {
	objs, err := objstore.ListAll(ctx, store, manifestPrefix(shard))
	if err != nil {
		return nil, nil, err
	}
	var versions []uint64
	var latest uint64
	for _, o := range objs {
		if v, ok := parseNumbered(o.Key, manifestPrefix(shard), ".json"); ok {
			versions = append(versions, v)
			latest = max(latest, v)
		}
	}
	if latest == 0 {
		return nil, nil, nil
	}
	m, err := readShardManifest(ctx, store, shard, latest, cache...)
	return m, versions, err
}

// newestShardManifest is latestShardManifest for readers, who need no list of versions: with
// known, the newest version this process has seen of shard, it lists only the versions after
// known. The newest version is never deleted and versions only grow, so an empty listing means
// known is still the newest (whether or not older ones were deleted meanwhile); a read of an
// unchanged shard then lists nothing and reads nothing.
func newestShardManifest(ctx context.Context, store objstore.Store, shard string, known uint64, cache manifestCache) (*ShardManifest, error) {
	if known == 0 {
		m, _, err := latestShardManifest(ctx, store, shard, cache)
		return m, err
	}
	latest := known
	for after := ManifestKey(shard, known); ; {
		page, err := store.List(ctx, manifestPrefix(shard), after, 1000)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Objects {
			if v, ok := parseNumbered(o.Key, manifestPrefix(shard), ".json"); ok {
				latest = max(latest, v)
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	return readShardManifest(ctx, store, shard, latest, cache)
}

// readShardManifest reads version v of shard's manifest, through cache when given.
func readShardManifest(ctx context.Context, store objstore.Store, shard string, latest uint64, cache ...manifestCache) (*ShardManifest, error) {
	key := ManifestKey(shard, latest)
	if len(cache) > 0 {
		if m, ok := cache[0].Get(key); ok {
			return m, nil
		}
	}
	data, err := store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	var m ShardManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("shard: corrupt shard manifest %s: %w", key, err)
	}
	if len(cache) > 0 {
		cache[0].Add(key, &m)
	}
	return &m, nil
}

// errStopEdit aborts UpdateManifest without error.
var errStopEdit = errors.New("no change")

// UpdateManifest applies edit to the latest manifest of shard and commits the result as the next
// version, re-reading and re-applying on conflict. edit may return errStopEdit (nothing to do;
// the latest manifest is returned) or any other error (returned as is). obsolete is the keys of
// the manifest versions the commit left more than keepManifests behind and of the head it
// superseded (heads.go): the caller hands them to its deleter (what it fails to delete, the
// garbage sweep finds).
func UpdateManifest(ctx context.Context, store objstore.Store, shard string, edit func(cur *ShardManifest) (*ShardManifest, error)) (next *ShardManifest, obsolete []string, err error) {
	for attempt := 0; attempt < 64; attempt++ {
		cur, versions, err := latestShardManifest(ctx, store, shard)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // the version listed was deleted before it was read: others committed past it
		}
		if err != nil {
			return nil, nil, err
		}
		base := cur
		if base == nil {
			base = &ShardManifest{Shard: shard, NextGeneration: 1}
		}
		next, err := edit(base.clone())
		if errors.Is(err, errStopEdit) {
			return cur, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		next.Version = base.Version + 1
		next.UpdatedAt = time.Now().UTC()
		next.RecentCommits = append(slices.Clone(base.RecentCommits[max(0, len(base.RecentCommits)-recentCommitIDs+1):]), newCommitID())
		data, err := json.Marshal(next)
		if err != nil {
			return nil, nil, err
		}
		// Head before commit (heads.go): readers trust the highest head, so it must name this
		// version before the version can exist.
		if err := store.Put(ctx, headKey(shard, next.Version), nil); err != nil {
			return nil, nil, err
		}
		err = store.PutIfAbsent(ctx, ManifestKey(shard, next.Version), data)
		if errors.Is(err, objstore.ErrExists) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		switch onChain, err := verifyOnChain(ctx, store, shard, next); {
		case err != nil:
			return nil, nil, err
		case !onChain:
			continue // a deleted version re-created: nothing took effect, so the edit is re-applied
		}
		if base.Version > 0 {
			obsolete = append(obsolete, headKey(shard, base.Version))
		}
		for _, v := range versions {
			if v+keepManifests < next.Version {
				obsolete = append(obsolete, ManifestKey(shard, v))
			}
		}
		return next, obsolete, nil
	}
	return nil, nil, fmt.Errorf("shard: shard %s manifest kept changing under concurrent updates", shard)
}

// ErrCommitUnverified: a shard manifest commit landed, but whether it is on the manifest chain
// could not be told (see verifyOnChain); it may or may not have taken effect.
var ErrCommitUnverified = errors.New("shard: a shard manifest commit could not be verified: many commits raced it")

// verifyOnChain tells whether next, just created with put-if-absent, is on the shard's manifest
// chain. Old versions are deleted (keepManifests), so a committer that read version v as the
// newest and stalled while others committed past v+keepManifests+1 re-creates the deleted v+1:
// its put-if-absent succeeds, but the chain went on without it and its edit took no effect.
// Listing the versions after next tells: none means next is the newest (were it re-created, the
// newest that led to its deletion would still be there, above it); otherwise the newest of them
// names the commit of next's version among its RecentCommits, which is next's or another's.
// When it does not reach back that far (more than recentCommitIDs commits went past, or written
// by an earlier release), or the listing or the read fails, ErrCommitUnverified.
func verifyOnChain(ctx context.Context, store objstore.Store, shard string, next *ShardManifest) (bool, error) {
	for attempt := 0; attempt < 4; attempt++ {
		page, err := store.List(ctx, manifestPrefix(shard), ManifestKey(shard, next.Version), 1000)
		if err != nil {
			return false, fmt.Errorf("%w (shard %s, version %d): %w", ErrCommitUnverified, shard, next.Version, err)
		}
		var newest uint64
		for _, o := range page.Objects {
			if v, ok := parseNumbered(o.Key, manifestPrefix(shard), ".json"); ok {
				newest = max(newest, v)
			}
		}
		if newest == 0 {
			return true, nil
		}
		m, err := readShardManifest(ctx, store, shard, newest)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // deleted since the listing: the chain moved on; look again
		}
		if err != nil {
			return false, fmt.Errorf("%w (shard %s, version %d): %w", ErrCommitUnverified, shard, next.Version, err)
		}
		if id := m.commitID(next.Version); id != "" {
			return id == next.commitID(next.Version), nil
		}
		break
	}
	return false, fmt.Errorf("%w (shard %s, version %d)", ErrCommitUnverified, shard, next.Version)
}

// LatestManifest returns the newest manifest of shard (nil when the shard has none), through the
// process's manifest cache: an unchanged shard costs one listing and no read.
func (a *Access) LatestManifest(ctx context.Context, shard string) (m *ShardManifest, err error) {
	for attempt := 0; attempt < 8; attempt++ {
		m, err = newestShardManifest(ctx, a.Objects, shard, a.manifests.newestVersion(shard), a.manifests)
		if !errors.Is(err, objstore.ErrNotFound) {
			return m, err
		}
		// The newest listed was deleted before it was read: others committed past it.
	}
	return m, err
}

// ListShards returns the ids of every shard that ever wrote to the store.
func (a *Access) ListShards(ctx context.Context) ([]string, error) {
	objs, err := objstore.ListAll(ctx, a.Objects, shardsDir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, strings.TrimPrefix(o.Key, shardsDir))
	}
	return out, nil
}

// ReadManifest returns the newest manifest of shard (nil when the shard has none), read from
// objects without any cache.
func ReadManifest(ctx context.Context, objects objstore.Store, shard string) (*ShardManifest, error) {
	m, _, err := latestShardManifest(ctx, objects, shard)
	return m, err
}
