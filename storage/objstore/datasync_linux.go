// fdatasync on Linux: file data and the metadata needed to read it back (size, extents), not
// timestamps.
package objstore

import (
	"os"
	"syscall"
)

func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
