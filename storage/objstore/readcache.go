// A read cache in front of an object store whose objects never change once written — every
// object Strata writes to a store that cannot write in place (S3): Parquet fragments, deletion
// vectors, key-index runs, manifest versions, WAL entries, generation key files. What Get and
// GetRange returned is kept in the process's byte-bounded object cache (kind "object", with
// hit/miss metrics), so a point get or a merge does not download again what it read a moment
// ago. Listings are never cached: the latest manifest version is always found by asking the
// store. The few objects that are rewritten in place (a table's latest-version hint, health
// probes) are named by a predicate and never cached, since another process may rewrite them; Put
// and Delete also drop what this process cached under their key. Returned bytes are shared with
// the cache: callers never modify them.
package objstore

import (
	"context"
	"strconv"

	"github.com/strata-store/strata/storage/cache"
)

// maxCachedObject: larger reads are not cached (a whole fragment read by a compaction would
// evict everything point reads need).
const maxCachedObject = 8 << 20

// ReadCached wraps a Store with a read cache (see the file comment).
type ReadCached struct {
	Store
	ns      cache.Namespace
	mutable func(key string) bool
}

// WithReadCache wraps inner; c is the process's object cache (nil: nothing is cached); mutable
// names the keys that may be rewritten (nil: none).
func WithReadCache(inner Store, c *cache.Cache, mutable func(key string) bool) *ReadCached {
	if mutable == nil {
		mutable = func(string) bool { return false }
	}
	return &ReadCached{Store: inner, ns: c.Namespace(), mutable: mutable}
}

const readCacheKind = "object"

func (r *ReadCached) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.mutable(key) {
		return r.Store.Get(ctx, key)
	}
	if data, ok := cache.Get[[]byte](r.ns, readCacheKind, key); ok {
		return data, nil
	}
	data, err := r.Store.Get(ctx, key)
	if err == nil && len(data) <= maxCachedObject {
		cache.Add(r.ns, readCacheKind, key, data, int64(len(data)))
	}
	return data, err
}

func (r *ReadCached) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.mutable(key) {
		return r.Store.GetRange(ctx, key, offset, length)
	}
	rk := key + "#" + strconv.FormatInt(offset, 10) + "+" + strconv.FormatInt(length, 10)
	if data, ok := cache.Get[[]byte](r.ns, readCacheKind, rk); ok {
		return data, nil
	}
	data, err := r.Store.GetRange(ctx, key, offset, length)
	if err == nil && len(data) <= maxCachedObject {
		cache.Add(r.ns, readCacheKind, rk, data, int64(len(data)))
	}
	return data, err
}

func (r *ReadCached) Put(ctx context.Context, key string, data []byte) error {
	cache.Remove(r.ns, key)
	err := r.Store.Put(ctx, key, data)
	cache.Remove(r.ns, key)
	return err
}

func (r *ReadCached) Delete(ctx context.Context, key string) error {
	err := r.Store.Delete(ctx, key)
	cache.Remove(r.ns, key)
	return err
}
