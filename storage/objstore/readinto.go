// Reads into the caller's memory: the optional capability of stores that can read a range of an
// object into a buffer the caller owns (a local filesystem), so a hot read path (a point get's
// pages) reuses its buffers instead of allocating one per read. Stores whose reads hand back
// bytes they keep (the read cache) or allocate anyway (S3) do not have it; callers fall back to
// GetRange. Wrappers (Prefixed, ProgressCounting) pass the capability through when the store they
// wrap has it.
//
// Contract: ReadRangeInto fills buf from offset of key and returns how many bytes it read: fewer
// than len(buf) only when the object ends first. It keeps no reference to buf once it returns.
package objstore

import (
	"context"
	"fmt"
)

// RangeReaderInto is implemented by stores that may read ranges into the caller's buffers;
// ReadsInto says whether this one does (a wrapper answers for the store it wraps).
type RangeReaderInto interface {
	ReadsInto() bool
	ReadRangeInto(ctx context.Context, key string, offset int64, buf []byte) (int, error)
}

// ReadsInto reports whether s supports ReadRangeInto.
func ReadsInto(s Store) bool {
	r, ok := s.(RangeReaderInto)
	return ok && r.ReadsInto()
}

// ReadRangeInto reads bytes of key from offset into buf through s (see the file comment), or
// fails with ErrUnsupported.
func ReadRangeInto(ctx context.Context, s Store, key string, offset int64, buf []byte) (int, error) {
	r, ok := s.(RangeReaderInto)
	if !ok || !r.ReadsInto() {
		return 0, fmt.Errorf("%w: reads into a buffer (%T)", ErrUnsupported, s)
	}
	return r.ReadRangeInto(ctx, key, offset, buf)
}
