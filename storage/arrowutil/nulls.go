// All-null columns without allocating: Nulls hands out shared, immutable all-null arrays.
//
// Every append of a sparse schema (a rollout batch sets ~10 of ~40 columns) used to build ~30
// all-null columns, then concatenate them per group commit; that was ~15% of the CPU of an
// append. Arrow arrays are immutable and reference counted, so one all-null array of a type and
// length can back every record that needs it.
//
// Ownership: the cache holds one reference to each array it keeps; a caller gets its own
// reference (Retain) and releases it as usual. Arrays are allocated with the Go allocator, not
// the caller's, so they never count against a caller's checked allocator and are freed by the
// garbage collector once the cache drops them and every record holding them is released.
// The cache keeps, per type, the most recent length asked for (appends of one client repeat
// their batch size), so it holds at most one array per distinct column type.
package arrowutil

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A cached array is at most maxCachedNulls long and maxCachedNullBytes large (a larger one is
// built for the caller alone): a fixed-width type can be wide (a 1,536-float vector is 6 KiB
// per row even when null), and the cache must stay small whatever the schema.
const (
	maxCachedNulls     = 1 << 16
	maxCachedNullBytes = 1 << 20
)

var nullCache struct {
	mu     sync.Mutex // guards byType
	byType map[string]arrow.Array
}

// Nulls returns an all-null array of type dt and length n; the caller releases it. The buffers
// are shared with other callers: never modify them.
func Nulls(dt arrow.DataType, n int) arrow.Array {
	if n > maxCachedNulls {
		return array.MakeArrayOfNull(memory.DefaultAllocator, dt, n)
	}
	key := dt.Fingerprint()
	nullCache.mu.Lock()
	if cached, ok := nullCache.byType[key]; ok && cached.Len() == n {
		cached.Retain()
		nullCache.mu.Unlock()
		return cached
	}
	nullCache.mu.Unlock()
	fresh := array.MakeArrayOfNull(memory.DefaultAllocator, dt, n)
	if fresh.Data().SizeInBytes() > maxCachedNullBytes {
		return fresh
	}
	fresh.Retain() // the cache's reference
	nullCache.mu.Lock()
	defer nullCache.mu.Unlock()
	if nullCache.byType == nil {
		nullCache.byType = map[string]arrow.Array{}
	}
	if old, ok := nullCache.byType[key]; ok {
		old.Release()
	}
	nullCache.byType[key] = fresh
	return fresh
}

// allNull reports whether every value of a is null (an empty array counts).
func allNull(a arrow.Array) bool {
	return a.NullN() == a.Len()
}
