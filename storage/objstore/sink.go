// Where the encoded bytes of a data file being written go (a table's fragment or key-index run).
// On a store that writes in place (a local filesystem) the object
// is created empty when the file starts and its bytes are written into it a chunk at a time, so
// a file being written holds one chunk, not its whole encoding; on other stores (S3) the file is
// encoded into memory and stored whole at the end.
//
// Either way nothing reads the object before a manifest names it, and a manifest names it only
// after store has returned (a streamed object is synced first): a crash or an error part way
// leaves an unreferenced object: Abort reports it for the caller's deleter, and version cleanup
// would otherwise collect it after its grace period.
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
)

// SinkChunkBytes is what a streamed object buffers between writes to its object: large
// enough that a write is one cheap syscall, small beside any budget.
const SinkChunkBytes = 1 << 20

// sinkChunks recycles the chunks: a fresh megabyte costs its page faults on every merge.
var sinkChunks = sync.Pool{New: func() any { b := make([]byte, 0, SinkChunkBytes); return &b }}

// errSinkClosed: a write after the object was stored or aborted (a bug, never expected).
var errSinkClosed = errors.New("objstore: sink already closed")

// Sink receives one file's encoded bytes in order. It is used by one goroutine.
type Sink interface {
	Write(p []byte) (int, error)
	// Size is the bytes written so far.
	Size() int64
	// Reserve makes room for n more bytes when the sink holds its bytes in memory (a hint).
	Reserve(n int)
	// Store makes the object durable under its path.
	Store(ctx context.Context) error
	// Abort frees what the sink holds. Not after Store. It reports whether an object was created
	// at the path: the caller owns deleting it (through its process's deleter), since a sink
	// has no one to report a failed delete to.
	Abort() (created bool)
	// Failed is the first error writing the bytes out (they are dropped after it).
	Failed() error
}

// NewSink opens the sink for an object at path in store: streamed when the store
// writes in place, unless the caller expects at most a chunk of bytes (expected >= 0), which is
// encoded in memory and stored with one put (streaming it would save nothing and cost a second
// sync). expected < 0: unknown.
func NewSink(ctx context.Context, store Store, path string, expected int64) (Sink, error) {
	if !WritesInPlace(store) || expected >= 0 && expected <= SinkChunkBytes {
		return &bufferedObject{store: store, path: path}, nil
	}
	if err := store.PutIfAbsent(ctx, path, nil); err != nil {
		return nil, fmt.Errorf("objstore: create %s: %w", path, err)
	}
	w, err := OpenWriter(ctx, store, path, WriterOptions{})
	if err != nil {
		// The empty object stays for version cleanup's grace period: deleting it here would
		// need a context and an owner this constructor has neither of.
		return nil, fmt.Errorf("objstore: open %s: %w", path, err)
	}
	chunk := sinkChunks.Get().(*[]byte)
	return &streamedObject{ctx: ctx, path: path, w: w, chunk: (*chunk)[:0]}, nil
}

// bufferedObject holds the whole encoding and stores it with one PutIfAbsent.
type bufferedObject struct {
	store Store
	path  string
	buf   bytes.Buffer
}

func (b *bufferedObject) Write(p []byte) (int, error) { return b.buf.Write(p) }
func (b *bufferedObject) Size() int64                 { return int64(b.buf.Len()) }
func (b *bufferedObject) Failed() error               { return nil }
func (b *bufferedObject) Abort() bool                 { b.buf = bytes.Buffer{}; return false }

// reserve allocates exactly the room asked for when the buffer must grow: bytes.Buffer's Grow
// would at least double what it already holds.
func (b *bufferedObject) Reserve(n int) {
	if b.buf.Available() >= n {
		return
	}
	grown := make([]byte, b.buf.Len(), b.buf.Len()+n)
	copy(grown, b.buf.Bytes())
	b.buf = *bytes.NewBuffer(grown)
}

func (b *bufferedObject) Store(ctx context.Context) error {
	if err := b.store.PutIfAbsent(ctx, b.path, b.buf.Bytes()); err != nil {
		return fmt.Errorf("objstore: write %s: %w", b.path, err)
	}
	b.buf = bytes.Buffer{}
	return nil
}

// streamedObject writes chunks into the object as they fill. The Parquet writer's io.Writer
// has no context, so the sink keeps the one the object was started with (the merge's: its
// deadline bounds every write). The first failed write is kept (Failed returns it) and every
// later byte is dropped: the Parquet writer never sees an error, which would leave its column
// writers half closed and their buffers unreleased; the fragment writer checks failed after
// each row group instead (a key-index run's writer, once at its end).
type streamedObject struct {
	ctx   context.Context
	path  string
	w     ObjectWriter
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
		s.err = fmt.Errorf("objstore: write %s: %w", s.path, err)
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

func (s *streamedObject) Failed() error { return s.err }

func (s *streamedObject) Size() int64 { return s.off + int64(len(s.chunk)) }
func (s *streamedObject) Reserve(int) {}

func (s *streamedObject) Store(ctx context.Context) error {
	s.flush()
	err := s.err
	if err == nil {
		if err = s.w.Sync(ctx); err != nil {
			err = fmt.Errorf("objstore: sync %s: %w", s.path, err)
		}
	}
	s.releaseChunk()
	return errors.Join(err, s.w.Close())
}

func (s *streamedObject) Abort() bool {
	_ = s.w.Close()
	s.releaseChunk()
	return true
}

// releaseChunk returns the chunk to the pool; a later Write (there is none after Store or
// Abort) would only drop its bytes.
func (s *streamedObject) releaseChunk() {
	if s.chunk != nil {
		chunk := s.chunk[:0]
		sinkChunks.Put(&chunk)
		s.chunk = nil
		if s.err == nil {
			s.err = errSinkClosed
		}
	}
}
