// The Linux hint: madvise(MADV_HUGEPAGE) over the buffer's whole 2 MiB pages, undone with
// MADV_NOHUGEPAGE (which keeps the huge pages already faulted in and stops further collapsing).
package hugepage

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func prefer(buf []byte) (func(), error) {
	if len(buf) < MinBytes {
		return func() {}, nil
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	lo, hi := interior(start, uintptr(len(buf)))
	if hi == lo {
		return func() {}, nil
	}
	pages := buf[lo-start : hi-start]
	if err := unix.Madvise(pages, unix.MADV_HUGEPAGE); err != nil {
		return func() {}, err // no transparent huge pages here (or not for this memory)
	}
	return func() { _ = unix.Madvise(pages, unix.MADV_NOHUGEPAGE) }, nil
}
