// Opening a file for direct writes on Linux (O_DIRECT).
package objstore

import (
	"os"
	"syscall"
)

// openDirect opens path for direct writes; nil when the filesystem does not allow it (tmpfs and
// some network filesystems refuse O_DIRECT): writes then all go through the page cache.
func openDirect(path string) *directWriter {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil
	}
	return &directWriter{f: f}
}
