// Direct writes for large in-place writes on a local filesystem, for writers opened with
// WriterOptions.Direct: the whole 4 KiB blocks of a large WriteAt bypass the page cache
// (O_DIRECT), staged through a few reusable aligned buffers; the partial blocks at either end are
// written through the page cache as before. The WAL's segments ask for it (written once, read
// back only by a claim's replay or a merge); table fragments and index runs do not (reads want
// them soon after they are written, and a direct write waits for the device).
//
// Why: a buffered pwrite copies every byte into page-cache pages the kernel must first find,
// zero-fill on a virtual machine's first touch and later write back, which on small machines
// costs more CPU than the copy itself (a 64 MiB WAL frame took 130-400 ms through the cache on
// a 2-core VM, against 15-70 ms written directly from a warm aligned buffer). The disk does the
// same work either way. The cost: what was written directly is not in the page cache, so a merge
// reads a segment's frames from the disk (once), where a buffered write might still have them
// cached.
//
// Rules that keep it correct:
//   - A block is written directly only when the one WriteAt call covers it whole, so no block is
//     ever written both ways: the partial blocks at a write's ends (which neighbouring writes
//     may share) always go through the page cache. The kernel drops any cached copy of a block
//     it writes directly, so readers of the file see the new bytes.
//   - Sync (fdatasync on the buffered descriptor) covers both: fdatasync makes every completed
//     write to the file durable, whichever descriptor made it.
//   - When the filesystem refuses direct I/O (it cannot be opened so, or a direct write fails
//     with EINVAL or EOPNOTSUPP, e.g. a device whose blocks are larger than 4 KiB) the writer
//     writes through the page cache from then on; nothing is lost, only the saving.
//
// Memory: the staging buffers are process-wide, at most maxDirectChunks of directChunkBytes
// each (allocated on first use and kept); a write that finds none free is written through the
// page cache rather than waiting.
package objstore

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

const (
	// directAlign is the offset, length and memory alignment direct writes use: a multiple of
	// every common logical block size (512 B and 4 KiB).
	directAlign = 4096
	// minDirectBytes: a write's whole blocks are written directly only when they span at least
	// this much; smaller writes are cheaper through the cache.
	minDirectBytes = 1 << 20
	// directChunkBytes is the size of one staging buffer, and of each direct pwrite.
	directChunkBytes = 8 << 20
	// maxDirectChunks bounds the staging buffers in the process (maxDirectChunks x
	// directChunkBytes of memory once all have been used).
	maxDirectChunks = 4
)

// directChunks is the process's pool of staging buffers.
var directChunks = newChunkPool(maxDirectChunks, directChunkBytes)

// chunkPool hands out at most max aligned buffers of size bytes; free ones are kept for reuse
// (their pages stay mapped, so a reuse costs no page faults).
type chunkPool struct {
	size   int
	free   chan []byte   // buffers not in use; capacity max, so put never blocks
	tokens chan struct{} // one per buffer allocated; capacity max
}

func newChunkPool(max, size int) *chunkPool {
	return &chunkPool{size: size, free: make(chan []byte, max), tokens: make(chan struct{}, max)}
}

// get returns a free buffer, a new one while fewer than max exist, or false when all are in use.
func (p *chunkPool) get() ([]byte, bool) {
	select {
	case b := <-p.free:
		return b, true
	default:
	}
	select {
	case p.tokens <- struct{}{}:
		return alignedBuffer(p.size), true
	default:
	}
	select { // one may have been put back meanwhile
	case b := <-p.free:
		return b, true
	default:
		return nil, false
	}
}

// put gives back a buffer get returned.
func (p *chunkPool) put(b []byte) { p.free <- b }

// alignedBuffer returns n bytes starting at a directAlign boundary.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	skip := (directAlign - int(addrOf(b)%directAlign)) % directAlign
	return b[skip : skip+n : skip+n]
}

// addrOf is the address of b's first byte.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// directWriter writes the whole blocks of large writes to a file directly; see the file comment.
type directWriter struct {
	f        *os.File    // the file opened for direct I/O
	disabled atomic.Bool // a direct write was refused: everything goes through the cache
	// pwrite writes aligned bytes at an aligned offset of f (nil: f.WriteAt); tests replace it
	// to see refusals.
	pwrite func(p []byte, off int64) error
}

// directRange is the part of [off, off+n) a direct write may cover: its whole directAlign
// blocks, [lo, hi); ok is false when they span less than minDirectBytes.
func directRange(off int64, n int) (lo, hi int64, ok bool) {
	lo = (off + directAlign - 1) / directAlign * directAlign
	hi = (off + int64(n)) / directAlign * directAlign
	return lo, hi, hi-lo >= minDirectBytes
}

// writeAt writes p at off: the whole blocks directly when it can (see directRange), the rest
// with buffered (the page-cache write).
func (d *directWriter) writeAt(p []byte, off int64, buffered func([]byte, int64) error) error {
	lo, hi, ok := directRange(off, len(p))
	if d == nil || !ok || d.disabled.Load() {
		return buffered(p, off)
	}
	if head := p[:lo-off]; len(head) > 0 {
		if err := buffered(head, off); err != nil {
			return err
		}
	}
	mid := p[lo-off : hi-off]
	if done, err := d.writeBlocks(mid, lo); err != nil {
		return err
	} else if done < len(mid) {
		if err := buffered(mid[done:], lo+int64(done)); err != nil {
			return err
		}
	}
	if tail := p[hi-off:]; len(tail) > 0 {
		return buffered(tail, hi)
	}
	return nil
}

// writeBlocks writes p (whole blocks, at an aligned off) directly through staging buffers and
// returns how many bytes it wrote; the caller writes the rest through the cache. It stops early,
// without an error, when no staging buffer is free or direct I/O is refused.
func (d *directWriter) writeBlocks(p []byte, off int64) (int, error) {
	chunk, ok := directChunks.get()
	if !ok {
		return 0, nil
	}
	defer directChunks.put(chunk)
	done := 0
	for done < len(p) {
		n := copy(chunk, p[done:])
		if err := d.writeDirect(chunk[:n], off+int64(done)); err != nil {
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) {
				d.disabled.Store(true)
				return done, nil
			}
			return done, err
		}
		done += n
	}
	return done, nil
}

func (d *directWriter) writeDirect(p []byte, off int64) error {
	if d.pwrite != nil {
		return d.pwrite(p, off)
	}
	_, err := d.f.WriteAt(p, off)
	return err
}

func (d *directWriter) close() error {
	if d == nil {
		return nil
	}
	return d.f.Close()
}
