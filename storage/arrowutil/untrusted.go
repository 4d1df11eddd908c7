// Reading Arrow IPC streams from bytes nobody vouches for (request bodies, WAL bytes): every
// length a stream declares is checked against the bytes actually present before anything is
// allocated, and everything the reader allocates (decompressed buffers) comes from an allocator
// with a hard cap. A few bytes can therefore never make the process allocate gigabytes.
package arrowutil

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ErrTooLarge: an IPC stream decompresses to more bytes than it may.
var ErrTooLarge = errors.New("arrowutil: the Arrow stream decodes to more data than allowed")

// ErrTruncated: an IPC stream declares more bytes than it holds (a malformed stream).
var ErrTruncated = errors.New("arrowutil: the Arrow stream declares more data than it holds")

// ReadBytesBatches reads every record of the Arrow IPC stream held in data, in order, with the
// stream's schema. Record buffers are slices of data (no copy), so data must not be modified
// while the records live. A message whose metadata or body length runs past the end of data is
// an error, detected before anything is allocated; compressed buffers are decompressed through
// an allocator that refuses to hand out more than decodedLimit bytes in all (ErrTooLarge; 0 =
// no limit). The caller releases the records.
func ReadBytesBatches(data []byte, mem memory.Allocator, decodedLimit int64) ([]arrow.RecordBatch, *arrow.Schema, error) {
	return readBytes(data, mem, decodedLimit, false)
}

// ReadBytesBatchesCopy is ReadBytesBatches with every message body copied into memory from mem
// (counted against decodedLimit), so the records do not keep data alive. WAL entries, read from
// buffers that hold more than the entry, are decoded this way.
func ReadBytesBatchesCopy(data []byte, mem memory.Allocator, decodedLimit int64) ([]arrow.RecordBatch, *arrow.Schema, error) {
	return readBytes(data, mem, decodedLimit, true)
}

func readBytes(data []byte, mem memory.Allocator, decodedLimit int64, copyBodies bool) ([]arrow.RecordBatch, *arrow.Schema, error) {
	if decodedLimit > 0 {
		mem = &cappedAllocator{mem: mem, limit: decodedLimit}
	}
	mr := &bytesMessageReader{data: data, decodedLimit: decodedLimit}
	if copyBodies {
		mr.mem = mem
	}
	mr.refs.Store(1) // owned by the ipc.Reader from here: its Release releases mr
	rd, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(mem))
	if err != nil {
		return nil, nil, fmt.Errorf("arrow stream: %w", err)
	}
	return drain(rd)
}

// bytesMessageReader hands out the IPC messages of an in-memory stream: continuation marker (or
// the pre-0.15 bare length), metadata length, metadata flatbuffer, body; a zero length or the
// end of data ends the stream. Metadata is bounds-checked (checkMessageMeta) before the library
// sees it.
type bytesMessageReader struct {
	data []byte
	mem  memory.Allocator // when set, bodies are copied into memory from it
	off  int
	refs atomic.Int64
	// decodedLimit (0: none) bounds what the stream's compressed buffers declare they decode to,
	// summed over its messages in decoded.
	decodedLimit, decoded int64
	msg                   *ipc.Message // the message handed out last, released at the next call
}

const ipcContinuation = 0xFFFFFFFF

func (r *bytesMessageReader) Message() (msg *ipc.Message, err error) {
	if r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
	rest := r.data[r.off:]
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if len(rest) < 4 {
		return nil, errors.New("arrow/ipc: truncated message prefix")
	}
	head, metaLen := 4, int64(int32(binary.LittleEndian.Uint32(rest)))
	switch uint32(metaLen) {
	case 0:
		return nil, io.EOF
	case ipcContinuation:
		if len(rest) < 8 {
			return nil, errors.New("arrow/ipc: truncated message prefix")
		}
		head, metaLen = 8, int64(int32(binary.LittleEndian.Uint32(rest[4:])))
		if metaLen == 0 {
			return nil, io.EOF
		}
	}
	if metaLen < 4 || metaLen > int64(len(rest)-head) {
		return nil, fmt.Errorf("%w: a message declares %d bytes of metadata, %d remain", ErrTruncated, metaLen, len(rest)-head)
	}
	meta := rest[head : head+int(metaLen)]
	if err := checkMessageMeta(meta); err != nil {
		return nil, err
	}
	bodyLen, err := messageBodyLen(meta)
	if err != nil {
		return nil, err
	}
	remain := int64(len(rest)) - int64(head) - metaLen
	if bodyLen < 0 || bodyLen > remain {
		return nil, fmt.Errorf("%w: a message declares a %d-byte body, %d bytes remain", ErrTruncated, bodyLen, remain)
	}
	bodyAt := head + int(metaLen)
	if r.decodedLimit > 0 {
		// Refused before the library allocates: a panic out of an allocation mid-batch can leave
		// what the library allocated before it unreleased.
		r.decoded += declaredDecodedBytes(meta, rest[bodyAt:bodyAt+int(bodyLen)])
		if r.decoded > r.decodedLimit {
			return nil, fmt.Errorf("%w: its compressed buffers declare more than %d decoded bytes", ErrTooLarge, r.decodedLimit)
		}
	}
	body := memory.NewBufferBytes(rest[bodyAt : bodyAt+int(bodyLen)])
	if r.mem != nil {
		copied := memory.NewResizableBuffer(r.mem)
		copied.Resize(int(bodyLen)) // may panic with ErrTooLarge: the ipc.Reader recovers it
		copy(copied.Bytes(), body.Bytes())
		body = copied
		defer copied.Release() // the message holds its own reference
	}
	r.msg = ipc.NewMessage(memory.NewBufferBytes(meta), body)
	r.off += bodyAt + int(bodyLen)
	return r.msg, nil
}

// messageBodyLen reads the body length a metadata flatbuffer declares; garbage is an error, not
// a panic.
func messageBodyLen(meta []byte) (n int64, err error) {
	defer func() {
		if recover() != nil {
			n, err = 0, errors.New("arrow/ipc: invalid message metadata")
		}
	}()
	probe := ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(nil))
	defer probe.Release()
	return probe.BodyLen(), nil
}

func (r *bytesMessageReader) Retain() { r.refs.Add(1) }

func (r *bytesMessageReader) Release() {
	if r.refs.Add(-1) == 0 && r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
}

// cappedAllocator hands out at most limit bytes at a time and panics with ErrTooLarge past it;
// the IPC reader turns its panics into errors (wrapping the panic value).
type cappedAllocator struct {
	mem   memory.Allocator
	limit int64
	used  atomic.Int64
}

func (a *cappedAllocator) take(n int64) {
	if a.used.Add(n) > a.limit {
		a.used.Add(-n)
		panic(fmt.Errorf("%w: decoding needs more than %d bytes", ErrTooLarge, a.limit))
	}
}

func (a *cappedAllocator) Allocate(size int) []byte {
	a.take(int64(size))
	return a.mem.Allocate(size)
}

func (a *cappedAllocator) Reallocate(size int, b []byte) []byte {
	a.take(int64(size - len(b)))
	return a.mem.Reallocate(size, b)
}

func (a *cappedAllocator) Free(b []byte) {
	a.used.Add(-int64(len(b)))
	a.mem.Free(b)
}

// ValidateColumn checks one column's buffers in full (offsets, lengths, UTF-8 of strings, nested
// children: array.ValidateFull) and that it has rows rows. The error says what is wrong without
// the library's message, which may quote the bad bytes. The library's own checks can panic on
// some malformed arrays (a string array whose offsets go backwards is sliced before its offsets
// are checked): such a panic is the answer "inconsistent", never a crash.
func ValidateColumn(col arrow.Array, rows int64) (err error) {
	defer func() {
		if recover() != nil {
			err = errors.New("its offsets, lengths or buffers are inconsistent")
		}
	}()
	if int64(col.Len()) != rows {
		return fmt.Errorf("it has %d rows, the batch %d", col.Len(), rows)
	}
	if err := array.ValidateFull(col); err != nil {
		if strings.Contains(err.Error(), "utf8") {
			return errors.New("it holds a string that is not valid UTF-8")
		}
		return errors.New("its offsets, lengths or buffers are inconsistent")
	}
	return nil
}

// ValidateRecord is ValidateColumn for every column of rec; the error names the column.
func ValidateRecord(rec arrow.RecordBatch) error {
	for i, f := range rec.Schema().Fields() {
		if err := ValidateColumn(rec.Column(i), rec.NumRows()); err != nil {
			return fmt.Errorf("column %q is not valid Arrow data: %w", f.Name, err)
		}
	}
	return nil
}
