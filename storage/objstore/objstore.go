// Package objstore is the object-store abstraction every table and WAL file goes through, with
// its local-filesystem and S3 implementations, a prefix view, a read cache and a fault-injection
// wrapper (the test doubles — memory, counting, faults — and the conformance suite live in
// objstoretest).
//
// Keys are '/'-separated relative paths ("_versions/00000000000000000001.json"); Validate rejects
// anything that could escape a root (absolute paths, "..", empty segments, backslashes).
//
// PutIfAbsent is the commit primitive: it creates the object atomically or fails with ErrExists,
// never overwriting; an S3 implementation maps it to a conditional PUT (If-None-Match: *). Every
// call takes a context and returns promptly once it is cancelled.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrNotFound: no object under that key.
	ErrNotFound = errors.New("object not found")
	// ErrExists: PutIfAbsent found an object already under that key.
	ErrExists = errors.New("object already exists")
	// ErrInvalidKey: the key is not a safe relative path.
	ErrInvalidKey = errors.New("invalid object key")
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// ListPage is one page of List results in key order; Next is empty on the last page and is
// otherwise passed back as startAfter.
type ListPage struct {
	Objects []ObjectInfo
	Next    string
}

// Store is an object store. Implementations are safe for concurrent use, and never keep a slice
// they are given (data, or ObjectWriter.WriteAt's p) after the call returns: callers reuse it.
type Store interface {
	// Get returns the whole object.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetRange returns length bytes starting at offset (fewer at the end of the object).
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	// Put writes the object, replacing any previous one atomically (readers see old or new).
	Put(ctx context.Context, key string, data []byte) error
	// PutIfAbsent creates the object atomically, or fails with ErrExists.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// List returns up to limit objects whose keys start with prefix and sort after startAfter.
	List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// Stat describes the object.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
}

// Validate checks that key is a safe relative path.
func Validate(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") || strings.ContainsAny(key, "\\\x00") {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

// MaxListObjects bounds what one ListAll collects: a listing past it (a store holding more
// objects than any store Strata writes, or a server that never ends a listing) is a storage
// fault, not an ever-growing slice.
const MaxListObjects = 10_000_000

// ListAll collects every object under prefix, page by page. A store's listing must move forward
// (each page after the previous one, keys under prefix) and end within MaxListObjects objects;
// otherwise the listing fails with ErrUnavailable.
func ListAll(ctx context.Context, s Store, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	after := ""
	for {
		page, err := s.List(ctx, prefix, after, 1000)
		if err != nil {
			return nil, err
		}
		if len(out)+len(page.Objects) > MaxListObjects {
			return nil, tooManyKeys(prefix)
		}
		out = append(out, page.Objects...)
		if page.Next == "" {
			return out, nil
		}
		if page.Next <= after || !strings.HasPrefix(page.Next, prefix) {
			return nil, fmt.Errorf("objstore: listing %q: the store's pages do not move forward: %w", prefix, ErrUnavailable)
		}
		after = page.Next
	}
}

// MaxObjectBytes bounds one object read whole: the largest object Strata writes is a WAL entry
// or a fragment, well below it. An object store that declares or sends more is misbehaving, and
// the read fails with ErrUnavailable before anything that size is allocated.
const MaxObjectBytes = 4 << 30

// ClampRange cuts a GetRange request (offset, length) to an object of size bytes, for Store
// implementations: a range past the end is cut short; a negative one is an error.
func ClampRange(size, offset, length int64) (int64, int64, error) {
	if offset < 0 || length < 0 {
		return 0, 0, fmt.Errorf("objstore: invalid range offset=%d length=%d", offset, length)
	}
	if offset > size {
		offset = size
	}
	end := min(offset+length, size)
	return offset, end, nil
}

// DirLister is implemented by stores that can name the immediate sub-prefixes ("directories")
// under a prefix without listing every object below them (S3: ListObjectsV2 with a delimiter).
type DirLister interface {
	ListDirs(ctx context.Context, prefix string) ([]string, error)
}
