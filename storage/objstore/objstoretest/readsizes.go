// A objstore.Store wrapper that keeps the largest single read of some keys: how tests bound what
// one read makes a caller hold.
package objstoretest

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/strata-store/strata/storage/objstore"
)

// ReadSizes wraps a store and keeps the largest ranged read (GetRange or ReadRangeInto) of a key
// under Prefix. It reads into buffers and writes in place exactly when the store it wraps does.
type ReadSizes struct {
	objstore.Store
	Prefix  string
	largest atomic.Int64
}

// Largest is the longest read of a key under Prefix since the last Reset.
func (r *ReadSizes) Largest() int64 { return r.largest.Load() }

// Reset forgets the reads so far.
func (r *ReadSizes) Reset() { r.largest.Store(0) }

func (r *ReadSizes) saw(key string, n int64) {
	if !strings.HasPrefix(key, r.Prefix) {
		return
	}
	for {
		old := r.largest.Load()
		if n <= old || r.largest.CompareAndSwap(old, n) {
			return
		}
	}
}

func (r *ReadSizes) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	r.saw(key, length)
	return r.Store.GetRange(ctx, key, offset, length)
}

func (r *ReadSizes) ReadsInto() bool { return objstore.ReadsInto(r.Store) }

func (r *ReadSizes) ReadRangeInto(ctx context.Context, key string, offset int64, buf []byte) (int, error) {
	r.saw(key, int64(len(buf)))
	return objstore.ReadRangeInto(ctx, r.Store, key, offset, buf)
}

func (r *ReadSizes) WritesInPlace() bool { return objstore.WritesInPlace(r.Store) }

func (r *ReadSizes) OpenWriter(ctx context.Context, key string, opts objstore.WriterOptions) (objstore.ObjectWriter, error) {
	return objstore.OpenWriter(ctx, r.Store, key, opts)
}
