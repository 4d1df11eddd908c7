// Reading bodies and bounding listings for the cloud stores (S3, Azure Blob, and the GCS store in
// its own package): an object store's declared sizes are checked before anything is allocated,
// and memory follows the bytes that actually arrive.
package objstore

import (
	"bytes"
	"fmt"
	"io"
)

// PreallocateMax is the most a read allocates ahead of the bytes arriving, whatever the object
// store declared: past it the buffer grows with the data actually received.
const PreallocateMax = 64 << 20

// ReadBody reads an object's body of declared length (-1 or 0: unknown) of at most max bytes.
// A declared length over max, a body longer than max or than declared, or one shorter than
// declared is an ErrUnavailable fault; memory follows the bytes received, never the declaration.
func ReadBody(body io.Reader, declared, max int64, mapErr func(error) error) ([]byte, error) {
	if declared > max {
		return nil, fmt.Errorf("objstore: the object store declares a %d-byte object, over the %d-byte bound: %w", declared, max, ErrUnavailable)
	}
	var buf bytes.Buffer
	if declared > 0 {
		buf.Grow(int(min(declared, PreallocateMax)))
	}
	limit := max
	if declared > 0 {
		limit = declared
	}
	n, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, mapErr(err)
	}
	switch {
	case n > limit:
		return nil, fmt.Errorf("objstore: the object store sent more than the %d bytes it declared or allowed: %w", limit, ErrUnavailable)
	case declared > 0 && n < declared:
		return nil, fmt.Errorf("objstore: the object store sent %d of the %d bytes it declared: %w", n, declared, ErrUnavailable)
	}
	return buf.Bytes(), nil
}

// ReadRangeBody reads a ranged read's body of declared length (0: unknown) for a range of length
// bytes: a declaration over the range is an ErrUnavailable fault, and memory follows the bytes
// received (at most length), never the declaration.
func ReadRangeBody(body io.Reader, declared, length int64, key string, mapErr func(error) error) ([]byte, error) {
	if declared > length {
		return nil, fmt.Errorf("objstore: get range of %s: the object store declares %d bytes for a %d-byte range: %w", key, declared, length, ErrUnavailable)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(length, PreallocateMax)))
	if _, err := buf.ReadFrom(io.LimitReader(body, length)); err != nil {
		return nil, mapErr(err)
	}
	return buf.Bytes(), nil
}

// MaxDirPages bounds a directory listing (1,000 directories a page: 10 million stores of a kind).
const MaxDirPages = 10_000

// ListPageMax is the most objects one List answers (S3 and Azure cap a page at 5,000 and GCS
// at 1,000).
const ListPageMax = 1000
