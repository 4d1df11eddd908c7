// Where the encoded bytes of a data file being written go: a fragment (fragmentwriter.go) or a
// key-index run (indexmerge.go). On a store that writes in place (a local filesystem) the object
// is created empty when the file starts and its bytes are written into it a chunk at a time, so
// a file being written holds one chunk, not its whole encoding; on other stores (S3) the file is
// encoded into memory and stored whole at the end.
//
// Either way nothing reads the object before a manifest names it, and a manifest names it only
// after store has returned (a streamed object is synced first): a crash or an error part way
// leaves an unreferenced object, which abort deletes and version cleanup would otherwise collect
// after its grace period.
package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/strata-store/strata/storage/objstore"
)

// objectStreamChunk is what a streamed object buffers between writes to its object: large
// enough that a write is one cheap syscall, small beside any budget.
const objectStreamChunk = 1 << 20

// streamChunks recycles the chunks: a fresh megabyte costs its page faults on every merge.
var streamChunks = sync.Pool{New: func() any { b := make([]byte, 0, objectStreamChunk); return &b }}

// errObjectClosed: a write after the object was stored or aborted (a bug, never expected).
var errObjectClosed = errors.New("table: object already closed")

// objectSink receives one file's encoded bytes in order.
type objectSink interface {
	Write(p []byte) (int, error)
	// size is the bytes written so far.
	size() int64
	// reserve makes room for n more bytes when the sink holds its bytes in memory (a hint).
	reserve(n int)
	// store makes the object durable under its path.
	store(ctx context.Context) error
	// abort frees what the sink holds and deletes what it wrote. Not after store.
	abort()
	// failed is the first error writing the bytes out (they are dropped after it).
	failed() error
}

// newObjectSink opens the sink for an object at path in t's store: streamed when the store
// writes in place, unless the caller expects at most a chunk of bytes (expected >= 0), which is
// encoded in memory and stored with one put (streaming it would save nothing and cost a second
// sync). expected < 0: unknown.
func newObjectSink(ctx context.Context, t *Table, path string, expected int64) (objectSink, error) {
	if !objstore.WritesInPlace(t.store) || expected >= 0 && expected <= objectStreamChunk {
		return &bufferedObject{t: t, path: path}, nil
	}
	if err := t.store.PutIfAbsent(ctx, path, nil); err != nil {
		return nil, fmt.Errorf("table: create %s: %w", path, err)
	}
	w, err := objstore.OpenWriter(ctx, t.store, path, objstore.WriterOptions{})
	if err != nil {
		t.deleteFiles([]string{path})
		return nil, fmt.Errorf("table: open %s: %w", path, err)
	}
	chunk := streamChunks.Get().(*[]byte)
	return &streamedObject{ctx: ctx, t: t, path: path, w: w, chunk: (*chunk)[:0]}, nil
}

// bufferedObject holds the whole encoding and stores it with one PutIfAbsent.
type bufferedObject struct {
	t    *Table
	path string
	buf  bytes.Buffer
}

func (b *bufferedObject) Write(p []byte) (int, error) { return b.buf.Write(p) }
func (b *bufferedObject) size() int64                 { return int64(b.buf.Len()) }
func (b *bufferedObject) failed() error               { return nil }
func (b *bufferedObject) abort()                      { b.buf = bytes.Buffer{} }

// reserve allocates exactly the room asked for when the buffer must grow: bytes.Buffer's Grow
// would at least double what it already holds.
func (b *bufferedObject) reserve(n int) {
	if b.buf.Available() >= n {
		return
	}
	grown := make([]byte, b.buf.Len(), b.buf.Len()+n)
	copy(grown, b.buf.Bytes())
	b.buf = *bytes.NewBuffer(grown)
}

func (b *bufferedObject) store(ctx context.Context) error {
	if err := b.t.store.PutIfAbsent(ctx, b.path, b.buf.Bytes()); err != nil {
		return fmt.Errorf("table: write %s: %w", b.path, err)
	}
	b.buf = bytes.Buffer{}
	return nil
}

// streamedObject writes chunks into the object as they fill. The Parquet writer's io.Writer
// has no context, so the sink keeps the one the object was started with (the merge's: its
// deadline bounds every write). The first failed write is kept (failed returns it) and every
// later byte is dropped: the Parquet writer never sees an error, which would leave its column
// writers half closed and their buffers unreleased; the fragment writer checks failed after
// each row group instead (a key-index run's writer, once at its end).
type streamedObject struct {
	ctx   context.Context
	t     *Table
	path  string
	w     objstore.ObjectWriter
	chunk []byte
	off   int64 // bytes written to the object
	err   error
}

func (s *streamedObject) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && s.err == nil {
		if len(s.chunk) == 0 && len(p) >= cap(s.chunk) {
			// A write of a chunk or more goes straight through, no copy.
			s.writeAt(p)
			break
		}
		c := copy(s.chunk[len(s.chunk):cap(s.chunk)], p)
		s.chunk, p = s.chunk[:len(s.chunk)+c], p[c:]
		if len(s.chunk) == cap(s.chunk) {
			s.flush()
		}
	}
	return n, nil
}

// writeAt writes p at the end of what the object holds, keeping the first error.
func (s *streamedObject) writeAt(p []byte) {
	if s.err != nil {
		return
	}
	if err := s.w.WriteAt(s.ctx, p, s.off); err != nil {
		s.err = fmt.Errorf("table: write %s: %w", s.path, err)
		return
	}
	s.off += int64(len(p))
}

func (s *streamedObject) flush() {
	if len(s.chunk) > 0 {
		s.writeAt(s.chunk)
		s.chunk = s.chunk[:0]
	}
}

func (s *streamedObject) failed() error { return s.err }

func (s *streamedObject) size() int64 { return s.off + int64(len(s.chunk)) }
func (s *streamedObject) reserve(int) {}

func (s *streamedObject) store(ctx context.Context) error {
	s.flush()
	err := s.err
	if err == nil {
		if err = s.w.Sync(ctx); err != nil {
			err = fmt.Errorf("table: sync %s: %w", s.path, err)
		}
	}
	s.releaseChunk()
	return errors.Join(err, s.w.Close())
}

func (s *streamedObject) abort() {
	_ = s.w.Close()
	s.releaseChunk()
	s.t.deleteFiles([]string{s.path})
}

// releaseChunk returns the chunk to the pool; a later Write (there is none after store or
// abort) would only drop its bytes.
func (s *streamedObject) releaseChunk() {
	if s.chunk != nil {
		chunk := s.chunk[:0]
		streamChunks.Put(&chunk)
		s.chunk = nil
		if s.err == nil {
			s.err = errObjectClosed
		}
	}
}
