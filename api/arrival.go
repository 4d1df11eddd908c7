// arrivalBuffer: the one way request bytes are collected in memory — allocated as they arrive
// (past a declared length's first preallocBodyBytes, never more than twice what arrived), and
// copied at most once on the way to one contiguous buffer.
package api

import (
	"errors"
	"io"

	"github.com/strata-store/strata/internal/hugepage"
)

// arrivalBuffer collects the bytes of one or more readers (a body, or a multipart body's parts,
// back to back) into what becomes one contiguous buffer.
//
// A declared length up to preallocBodyBytes is allocated whole before its bytes arrive. Past it,
// the bytes go into chunks, the first as large as half the declared length allows up to
// preallocBodyBytes, each next one as large as all before it (no copy when one fills). When the
// whole's length is known (declared, an upper bound), the chunks stop at half of it: one buffer
// of the declared length is allocated, the half copied in once and the rest read straight into
// it — the bytes cost 1.5 times themselves at their peak, where a doubling buffer's copies (and
// any slices still pointing into its old arrays) cost up to 3 times. With no declared length the
// chunks are joined once, by bytes. Large reads go through huge pages (each fresh 4 KiB page
// would be a fault).
type arrivalBuffer struct {
	declared int64    // the whole's length or upper bound (<= 0: unknown)
	chunks   [][]byte // before whole exists: each filled to its length but the last
	whole    []byte   // after the switch: everything, contiguous
	n        int64    // bytes collected
}

func newArrivalBuffer(declared int64) *arrivalBuffer { return &arrivalBuffer{declared: declared} }

// len is the number of bytes collected.
func (a *arrivalBuffer) len() int64 { return a.n }

// readFrom collects r to its end (io.EOF is not an error; other errors are returned as they are).
func (a *arrivalBuffer) readFrom(r io.Reader) error {
	for {
		if a.whole != nil && len(a.whole) == cap(a.whole) {
			// The declared length arrived: a one-byte read settles whether the bytes end here
			// (no regrowth just to see the end); more than declared grows as any slice does.
			var probe [1]byte
			n, err := io.ReadFull(r, probe[:])
			if n == 0 {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					return nil
				}
				return err
			}
			a.whole = append(a.whole, probe[0])
			a.n++
			continue
		}
		free := a.free()
		n, err := hugepage.ReadFull(r, free)
		a.grow(n)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// free is where the next bytes go (never empty): the last chunk's or the whole's spare room,
// made when there is none.
func (a *arrivalBuffer) free() []byte {
	if a.whole != nil {
		return a.whole[len(a.whole):cap(a.whole)] // readFrom grows a full one
	}
	if len(a.chunks) > 0 {
		if last := a.chunks[len(a.chunks)-1]; len(last) < cap(last) {
			return last[len(last):cap(last)]
		}
	}
	half := (a.declared + 1) / 2
	if a.declared > 0 && (a.n >= half || a.declared <= preallocBodyBytes) {
		a.whole = a.joined(a.declared)
		return a.free()
	}
	next := int64(64 << 10)
	if a.n > 0 {
		next = a.n
	} else if a.declared > 0 {
		next = min(half, preallocBodyBytes)
	}
	if a.declared > 0 {
		next = min(next, half-a.n) // land on the half exactly
	}
	a.chunks = append(a.chunks, make([]byte, 0, next))
	return a.chunks[len(a.chunks)-1][:next]
}

// grow records that n bytes were written to what free returned.
func (a *arrivalBuffer) grow(n int) {
	a.n += int64(n)
	if a.whole != nil {
		a.whole = a.whole[:len(a.whole)+n]
		return
	}
	last := &a.chunks[len(a.chunks)-1]
	*last = (*last)[:len(*last)+n]
}

// bytes is everything collected, contiguous (the buffer's owner is the caller from now on).
func (a *arrivalBuffer) bytes() []byte {
	if a.whole == nil {
		a.whole = a.joined(a.n)
	}
	return a.whole
}

// joined copies the chunks into one slice of capacity size and drops them.
func (a *arrivalBuffer) joined(size int64) []byte {
	if len(a.chunks) == 1 && int64(cap(a.chunks[0])) >= size {
		out := a.chunks[0]
		a.chunks = nil
		return out
	}
	out := make([]byte, 0, max(size, a.n))
	for i, c := range a.chunks {
		out = append(out, c...)
		a.chunks[i] = nil // collectable as soon as it is copied
	}
	a.chunks = nil
	return out
}
