// The Table handle: creating and opening tables, reading manifests, and the handle's namespace in
// the process-wide object cache (manifests, Parquet footers, deletion vectors, key-index run
// footers). The cache holds only immutable data keyed by path or version, so it needs no
// invalidation.
package table

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/deleter"
	"github.com/strata-store/strata/storage/fragment"
	"github.com/strata-store/strata/storage/objstore"
)

// Options configure a Table handle.
type Options struct {
	// Allocator for Arrow memory; memory.DefaultAllocator when nil.
	Allocator memory.Allocator
	// Metrics to count into; a private unregistered set when nil.
	Metrics *Metrics
	// Now is the clock for manifest timestamps and cleanup ages; time.Now when nil.
	Now func() time.Time
	// CommitRetries bounds how often a writer re-prepares after losing a commit race (default 16).
	CommitRetries int
	// Cache is the process-wide object cache (share one per process); when nil, the handle gets a
	// private one of defaultCacheBytes.
	Cache *cache.Cache
	// Deleter carries out every deletion (share one per process); deleter.Shared() when nil.
	Deleter *deleter.Deleter
}

// defaultCacheBytes is the object cache of a handle opened without a shared one (tests, tools).
const defaultCacheBytes = 64 << 20

// Table is a handle on one table in an object store. It is safe for concurrent use and holds no
// lock across I/O; see the package comment for the commit protocol.
type Table struct {
	store   objstore.Store
	deleter *deleter.Deleter // every delete of the table's objects
	mem     memory.Allocator
	metrics *Metrics
	now     func() time.Time
	retries int

	cache      cache.Namespace      // manifests, footers, deletion bitmaps, key-index footers
	latestSeen atomic.Uint64        // the latest version found last; where the next search starts
	projected  fragment.Projections // the schemas of column lists reads asked for
	reader     *fragment.Reader     // reads the table's fragments (same store, cache namespace, allocator)
	// schema is the schema the handle's manifests were last decoded with: a manifest read with
	// the same fields shares it (shareSchema), so that retained versions do not each hold a copy
	// and the projections keyed by it stay found across versions.
	schema atomic.Pointer[decodedSchema]
}

// decodedSchema is a manifest's fields and the Arrow schema decoded from them.
type decodedSchema struct {
	fields []fieldJSON
	schema *arrow.Schema
}

// shareSchema makes m use the schema the handle decoded last when m's fields are the same, and
// otherwise makes m's the one later manifests share.
func (t *Table) shareSchema(m *Manifest) {
	if prev := t.schema.Load(); prev != nil && sameFields(prev.fields, m.Fields) {
		m.Fields, m.schema = prev.fields, prev.schema
		return
	}
	t.schema.Store(&decodedSchema{fields: m.Fields, schema: m.schema})
}

func newHandle(store objstore.Store, opts Options) *Table {
	t := &Table{store: store, deleter: opts.Deleter, mem: opts.Allocator, metrics: opts.Metrics, now: opts.Now, retries: opts.CommitRetries}
	if t.deleter == nil {
		t.deleter = deleter.Shared()
	}
	if t.mem == nil {
		t.mem = memory.DefaultAllocator
	}
	if t.metrics == nil {
		t.metrics = NewMetrics(nil)
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.retries <= 0 {
		t.retries = 16
	}
	shared := opts.Cache
	if shared == nil {
		shared = cache.New(defaultCacheBytes, nil)
	}
	t.cache = shared.Namespace()
	t.reader = &fragment.Reader{Store: store, Cache: t.cache, Mem: t.mem, Schemas: &t.projected}
	return t
}

// Create makes a new empty table (version 1) with the given user schema and key column
// (DefaultKeyColumn when empty). Creating a table that exists with the same schema and key is a
// no-op returning the existing handle; with another definition it is ErrConflict.
func Create(ctx context.Context, store objstore.Store, user *arrow.Schema, keyColumn string, opts Options) (*Table, error) {
	if keyColumn == "" {
		keyColumn = DefaultKeyColumn
	}
	if err := validateUserSchema(user, keyColumn); err != nil {
		return nil, err
	}
	t := newHandle(store, opts)
	m := &Manifest{Version: 1, CreatedAt: t.now().UTC(), Operation: "create", KeyColumn: keyColumn,
		WALWatermarks: map[string]uint64{}}
	if err := m.setSchema(withInternalColumns(user)); err != nil {
		return nil, err
	}
	err := commitManifest(ctx, store, m)
	if errors.Is(err, objstore.ErrExists) {
		existing, rerr := readManifest(ctx, store, 1)
		if rerr != nil {
			return nil, rerr
		}
		if existing.KeyColumn != keyColumn || !existing.Schema().Equal(m.Schema()) {
			return nil, fmt.Errorf("%w: a table with another schema or key column already exists", ErrConflict)
		}
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("table: create: %w", err)
	}
	return t, nil
}

// Open returns a handle on an existing table, or ErrNotFound.
func Open(ctx context.Context, store objstore.Store, opts Options) (*Table, error) {
	t := newHandle(store, opts)
	if _, err := t.Latest(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// Latest reads the newest committed manifest. Manifests are immutable and shared through a
// cache: callers must not modify the result.
func (t *Table) Latest(ctx context.Context) (*Manifest, error) {
	v, err := latestVersion(ctx, t.store, t.latestSeen.Load())
	if err != nil {
		return nil, err
	}
	m, err := t.Version(ctx, v)
	if err != nil {
		return nil, err
	}
	if prev := t.latestSeen.Swap(v); prev != 0 && prev < v {
		t.forgetSuperseded(prev, m)
	}
	return m, nil
}

// forgetSuperseded drops from the cache what the newer latest manifest m no longer references
// and the manifest of version prev: the footers of fragments a merge or compaction replaced,
// replaced deletion vectors, compacted key-index runs. Readers of older versions read them
// again if they need them; without this the cache would fill with what no live read touches
// before evicting anything.
func (t *Table) forgetSuperseded(prev uint64, m *Manifest) {
	key := "v/" + strconv.FormatUint(prev, 10)
	old, ok := cache.Get[*Manifest](t.cache, "manifest", key)
	if !ok {
		return
	}
	cache.Remove(t.cache, key)
	live := make(map[string]bool, 2*len(m.Fragments))
	for _, f := range m.Fragments {
		live[f.Path] = true
		live[deletionKey(f)] = true
	}
	for _, f := range old.Fragments {
		if !live[f.Path] {
			cache.Remove(t.cache, f.Path)
		}
		if f.DeletionFile != "" && !live[deletionKey(f)] {
			cache.Remove(t.cache, deletionKey(f))
		}
	}
	if old.KeyIndex == nil {
		return
	}
	segs := map[string]bool{}
	if m.KeyIndex != nil {
		for _, s := range m.KeyIndex.Runs {
			segs[s.Path] = true
		}
	}
	for _, s := range old.KeyIndex.Runs {
		if !segs[s.Path] {
			cache.Remove(t.cache, s.Path)
		}
	}
}

// Version reads a specific retained version (a read-only checkout). The result is shared: do
// not modify it.
func (t *Table) Version(ctx context.Context, v uint64) (*Manifest, error) {
	key := "v/" + strconv.FormatUint(v, 10)
	if m, ok := cache.Get[*Manifest](t.cache, "manifest", key); ok {
		return m, nil
	}
	m, err := readManifest(ctx, t.store, v)
	if err != nil {
		return nil, err
	}
	t.shareSchema(m)
	cache.Add(t.cache, "manifest", key, m, m.approxBytes())
	return m, nil
}

func randomName() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errCommitUnknown: the manifest write failed in a way that does not say whether it landed (a
// timeout, a crash). The files it references must then be left for CleanupVersions, which
// deletes them only if no retained version references them.
var errCommitUnknown = errors.New("table: commit outcome unknown")

// commitWithRetry commits the manifest prepare builds on top of the latest version. When another
// writer created that version first, it reloads the latest manifest and calls prepare again
// (which must re-validate its work against the new base), at most t.retries times. prepare
// returns nil to mean "nothing to commit"; it owns (and cleans up) the files it writes.
func (t *Table) commitWithRetry(ctx context.Context, op string, prepare func(base *Manifest) (*Manifest, error)) (*Manifest, error) {
	for attempt := 0; attempt < t.retries; attempt++ {
		base, err := t.Latest(ctx)
		if err != nil {
			return nil, err
		}
		next, err := prepare(base)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return base, nil
		}
		next.Counters.DroppedBytes = base.Counters.DroppedBytes + droppedBytes(base, next)
		err = commitManifest(ctx, t.store, next)
		if err == nil {
			t.metrics.commits.WithLabelValues(op).Inc()
			return next, nil
		}
		if !errors.Is(err, objstore.ErrExists) {
			return nil, fmt.Errorf("%w: %s v%d: %w", errCommitUnknown, op, next.Version, err)
		}
		t.metrics.commitConflicts.WithLabelValues(op).Inc()
		// Back off a little (randomised, growing) so writers that keep colliding spread out.
		pause := time.Duration(mrand.Int64N(int64(time.Millisecond) << min(attempt, 5)))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
	return nil, fmt.Errorf("%w: %s lost the commit race %d times", ErrConflict, op, t.retries)
}

// deleteFiles hands the files an abandoned attempt wrote (no manifest names them) to the
// deleter, detached from the caller's context (which may be the reason the attempt failed).
// Anything left is removed by CleanupVersions after its grace period.
func (t *Table) deleteFiles(paths []string) {
	for _, p := range paths {
		t.deleter.Abandon(t.store, fileKind(p), p)
	}
}

func isCommitUnknown(err error) bool { return errors.Is(err, errCommitUnknown) }
