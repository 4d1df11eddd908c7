// WAL entries being written, as gathered pieces: an entry is a list of byte slices that follow
// each other, rather than one buffer. Small pieces (IPC framing, flatbuffer metadata, padding,
// small column buffers) are copied into buffers the entry owns; a large column buffer is
// referenced where it lies, inside the Arrow buffers of the record the entry was encoded from. A
// large append is then written to its WAL segment without a second copy of its rows in memory
// (the request's columns are the only copy until the memtable lets them go).
//
// Ownership: a referenced piece is valid while the record it lies in is retained. The writer keeps
// every append's record retained until its group's entry is written (commit releases them after
// the write), and hands the entry's own buffers back (release) at the same point. Only bytes that
// lie inside the record's own buffers are ever referenced: anything else the IPC encoder writes
// (buffers it makes and frees itself, such as rebased offsets of a sliced array) is copied.
package shard

import (
	"encoding/binary"
	"hash/crc32"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// minReferencedPiece: column buffers at least this large are referenced, not copied; writing a
// frame still copies runs of smaller pieces into one buffer, so a group of many small appends is
// one write, as before.
const minReferencedPiece = 1 << 20

// entryData is one WAL entry's bytes: pieces in order, size bytes in all.
type entryData struct {
	pieces [][]byte
	size   int
	owned  [][]byte // buffers from entryBuffer, handed back by release
}

// entryBytes wraps contiguous bytes the caller owns.
func entryBytes(b []byte) *entryData {
	if len(b) == 0 {
		return &entryData{}
	}
	return &entryData{pieces: [][]byte{b}, size: len(b)}
}

// release hands the entry's own buffers back; neither the entry nor any view of it may be used
// afterwards.
func (e *entryData) release() {
	for _, b := range e.owned {
		releaseEntryBuffer(b)
	}
	e.owned, e.pieces, e.size = nil, nil, 0
}

// join returns the entry as one slice: its only piece, or a copy in a buffer the entry owns
// (valid until release).
func (e *entryData) join() []byte {
	if len(e.pieces) == 1 {
		return e.pieces[0]
	}
	out := entryBuffer(e.size)
	for _, p := range e.pieces {
		out = append(out, p...)
	}
	e.owned = append(e.owned, out)
	return out
}

// view returns bytes [off, off+n) of the entry: a sub-slice of a piece when they lie in one,
// else a copy. ok is false when the range is not inside the entry.
func (e *entryData) view(off, n int) ([]byte, bool) {
	if off < 0 || n < 0 || off > e.size-n {
		return nil, false
	}
	var out []byte
	for _, p := range e.pieces {
		if n == 0 {
			break
		}
		if off >= len(p) {
			off -= len(p)
			continue
		}
		take := min(len(p)-off, n)
		if out == nil && take == n {
			return p[off : off+n : off+n], true
		}
		out = append(out, p[off:off+take]...)
		off, n = 0, n-take
	}
	return out, true
}

// appendRange appends the pieces covering bytes [off, end) of the entry to dst.
func (e *entryData) appendRange(dst [][]byte, off, end int) [][]byte {
	for _, p := range e.pieces {
		if end <= 0 {
			break
		}
		if off < len(p) {
			dst = append(dst, p[max(off, 0):min(end, len(p))])
		}
		off, end = off-len(p), end-len(p)
	}
	return dst
}

// checksum is crc32c of the entry's bytes.
func (e *entryData) checksum() uint32 {
	var crc uint32
	for _, p := range e.pieces {
		crc = crc32.Update(crc, castagnoli, p)
	}
	return crc
}

// writePieces calls write with the entry's bytes in order and their offsets within the entry:
// referenced pieces and lone small pieces as they are, each run of several smaller ones copied
// into one buffer first (one write instead of one per piece).
func (e *entryData) writePieces(write func(p []byte, off int) error) error {
	var run []byte
	runStart, at := 0, 0
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		err := write(run, runStart)
		releaseEntryBuffer(run)
		run = nil
		return err
	}
	for i, p := range e.pieces {
		if len(p) >= minReferencedPiece || (run == nil && e.smallRunBytes(i) == len(p)) {
			if err := flush(); err != nil {
				return err
			}
			if err := write(p, at); err != nil {
				return err
			}
		} else {
			if run == nil {
				runStart = at
				run = entryBuffer(e.smallRunBytes(i))
			}
			run = append(run, p...)
		}
		at += len(p)
	}
	return flush()
}

// smallRunBytes is the size of the run of small pieces starting at piece i.
func (e *entryData) smallRunBytes(i int) int {
	n := 0
	for _, p := range e.pieces[i:] {
		if len(p) >= minReferencedPiece {
			break
		}
		n += len(p)
	}
	return n
}

// gatherWriter is the io.Writer an entry is encoded into: a write that lies inside one of the
// record's large buffers becomes a referenced piece; anything else is appended to the current
// owned buffer (which never grows: a new one is taken when it is full, so earlier pieces that
// slice it stay valid).
type gatherWriter struct {
	e         *entryData
	buffers   []bufferRange // the record's buffers of at least minReferencedPiece bytes
	tail      []byte        // the current owned buffer
	tailStart int           // where the bytes not yet made a piece start in tail
	tailSize  int           // the size of the next owned buffer
}

type bufferRange struct{ start, end uintptr }

// newGatherWriter prepares to encode rec; smallBytes estimates what will be copied.
func newGatherWriter(rec arrow.RecordBatch, smallBytes int) *gatherWriter {
	g := &gatherWriter{e: &entryData{}, tailSize: max(smallBytes, 4<<10)}
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil && b.Len() >= minReferencedPiece {
				start := uintptr(unsafe.Pointer(unsafe.SliceData(b.Bytes())))
				g.buffers = append(g.buffers, bufferRange{start, start + uintptr(b.Len())})
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
		if d.DataType().ID() == arrow.DICTIONARY && d.Dictionary() != nil {
			add(d.Dictionary())
		}
	}
	for _, c := range rec.Columns() {
		add(c.Data())
	}
	return g
}

// referenced reports whether p lies inside one of the record's large buffers.
func (g *gatherWriter) referenced(p []byte) bool {
	if len(p) < minReferencedPiece {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	end := start + uintptr(len(p))
	for _, r := range g.buffers {
		if start >= r.start && end <= r.end {
			return true
		}
	}
	return false
}

func (g *gatherWriter) Write(p []byte) (int, error) {
	if g.referenced(p) {
		g.cutTail()
		g.e.pieces = append(g.e.pieces, p)
		g.e.size += len(p)
		return len(p), nil
	}
	if len(g.tail)+len(p) > cap(g.tail) {
		g.cutTail()
		g.tail = entryBuffer(max(len(p), g.tailSize))
		g.tailStart = 0
		g.e.owned = append(g.e.owned, g.tail[:0])
	}
	g.tail = append(g.tail, p...)
	g.e.size += len(p)
	return len(p), nil
}

// cutTail makes the owned bytes written since the last piece a piece of their own.
func (g *gatherWriter) cutTail() {
	if len(g.tail) > g.tailStart {
		g.e.pieces = append(g.e.pieces, g.tail[g.tailStart:len(g.tail):len(g.tail)])
		g.tailStart = len(g.tail)
	}
}

// finish returns the entry written.
func (g *gatherWriter) finish() *entryData {
	g.cutTail()
	return g.e
}

// messageAt returns the type and total length of the IPC message starting at off in the entry
// (see ipcMessage); ok is false when no whole message starts there.
func (e *entryData) messageAt(off int) (kind byte, length int, ok bool) {
	prefix, ok := e.view(off, 8)
	if !ok {
		return 0, 0, false
	}
	metaLen := int(int32(binary.LittleEndian.Uint32(prefix[4:])))
	if metaLen < 8 {
		return 0, 0, false
	}
	head, ok := e.view(off, 8+metaLen)
	if !ok {
		return 0, 0, false
	}
	return ipcMessageIn(head, e.size-off)
}
