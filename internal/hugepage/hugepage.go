// Package hugepage asks the kernel to back large, freshly allocated buffers with transparent
// huge pages while they are first written. The first touch of every 4 KiB page of memory the
// process has not used before (or has returned to the kernel) is a page fault; on a virtual
// machine one costs microseconds, so filling a 64 MiB request body takes 16,384 of them — more
// CPU than reading the bytes off the socket. Backed by 2 MiB pages, the same fill takes 32.
//
// The hint is for the fill only: Prefer marks the buffer's whole 2 MiB pages before the first
// write and the function it returns unmarks them after, so the kernel's background collapser never turns the rest of the Go
// heap (which the runtime returns to the kernel page by page) into huge pages that would pin
// memory the runtime has released. The buffer itself is ordinary Go memory, freed by the
// collector like any other: nothing here changes who owns it or for how long.
package hugepage

import "io"

// MinBytes is the smallest buffer worth hinting: below it a buffer holds at most one whole
// 2 MiB page, and the two system calls cost more than the faults they save.
const MinBytes = 4 << 20

// pageBytes is the size of a transparent huge page on the platforms that have them.
const pageBytes = 2 << 20

// ReadFull reads len(buf) bytes from r into buf (io.ReadFull), with buf's whole huge pages
// hinted for the fill when buf is at least MinBytes.
func ReadFull(r io.Reader, buf []byte) (int, error) {
	done := Prefer(buf)
	defer done()
	return io.ReadFull(r, buf)
}

// Prefer hints that buf's whole 2 MiB pages be backed by huge pages from now until done is
// called; call done once buf is filled. It does nothing for buffers under MinBytes, where the
// platform has no transparent huge pages, or when the kernel refuses the hint (the fill then
// faults page by page, as it would without it).
func Prefer(buf []byte) (done func()) {
	done, _ = prefer(buf)
	return done
}

// interior is the range of whole pageBytes pages inside [start, start+n): [lo, hi), empty
// when there is none.
func interior(start, n uintptr) (lo, hi uintptr) {
	lo = (start + pageBytes - 1) &^ (pageBytes - 1)
	hi = (start + n) &^ (pageBytes - 1)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}
