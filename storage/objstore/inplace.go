// In-place writes: the optional capability of stores whose objects can be extended and made
// durable piece by piece (a local filesystem; not S3). The MemWAL writes its segment files
// through it: one durable write per group commit instead of one new object.
//
// Contract: OpenWriter opens an object that already exists (create it empty with PutIfAbsent;
// that makes its name durable). WriteAt writes at an offset (a write past the end extends the
// object; a gap reads as zeros); Sync makes every completed WriteAt durable. Readers (Get,
// GetRange, in any process) see completed writes at once, may see a write in progress torn, and
// after a crash may see torn or zeroed bytes anywhere past the last Sync: callers frame and
// checksum what they write. Wrappers (Prefixed, Faulty, Counting) pass the capability through
// when the store they wrap has it.
package objstore

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnsupported: the store lacks an optional capability (in-place writes, reads into a buffer).
var ErrUnsupported = errors.New("objstore: not supported by this store")

// ObjectWriter writes one object in place. Safe for concurrent use (writes to disjoint ranges).
type ObjectWriter interface {
	WriteAt(ctx context.Context, p []byte, off int64) error
	Sync(ctx context.Context) error
	Close() error
}

// InPlaceWriter is implemented by stores that may support in-place writes; WritesInPlace says
// whether this one does (a wrapper answers for the store it wraps).
type InPlaceWriter interface {
	WritesInPlace() bool
	OpenWriter(ctx context.Context, key string, opts WriterOptions) (ObjectWriter, error)
}

// WriterOptions tune an in-place writer.
type WriterOptions struct {
	// Direct asks for the whole blocks of large writes to bypass the page cache where the store
	// can (a local filesystem on Linux, see directwrite.go): for bytes written once and seldom
	// read back, such as WAL segments. Stores without a page cache ignore it.
	Direct bool
}

// The stores and wrappers here that may write in place: a method whose signature drifted from
// the interface would silently lose the capability, so the compiler checks it.
var _ = []InPlaceWriter{(*Local)(nil), (*Prefixed)(nil), (*ProgressCounting)(nil)}

// WritesInPlace reports whether s supports OpenWriter.
func WritesInPlace(s Store) bool {
	w, ok := s.(InPlaceWriter)
	return ok && w.WritesInPlace()
}

// OpenWriter opens key in s for in-place writes, or fails with ErrUnsupported.
func OpenWriter(ctx context.Context, s Store, key string, opts WriterOptions) (ObjectWriter, error) {
	w, ok := s.(InPlaceWriter)
	if !ok || !w.WritesInPlace() {
		return nil, fmt.Errorf("%w: in-place writes (%T)", ErrUnsupported, s)
	}
	return w.OpenWriter(ctx, key, opts)
}
