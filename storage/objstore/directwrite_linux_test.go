package objstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestALargeWritesWholeBlocksBypassThePageCache checks that the direct path is taken where the
// filesystem allows it: the whole blocks of a large write are not left in the page cache, the
// partial blocks at its ends are.
func TestALargeWritesWholeBlocksBypassThePageCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewLocal(dir)
	require.NoError(t, err)
	require.NoError(t, s.PutIfAbsent(ctx, "seg", nil))
	w, err := s.OpenWriter(ctx, "seg")
	require.NoError(t, err)
	defer w.Close()
	if w.(*localWriter).direct == nil {
		t.Skip("this filesystem refuses O_DIRECT: every write goes through the page cache")
	}
	p := bytes.Repeat([]byte{7}, 4<<20)
	const off = 100 // the first and last blocks are partial
	require.NoError(t, w.WriteAt(ctx, p, off))
	f, err := os.Open(filepath.Join(dir, "seg"))
	require.NoError(t, err)
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, off+len(p), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)
	pageSize := os.Getpagesize()
	resident := make([]byte, (len(m)+pageSize-1)/pageSize)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&resident[0])))
	require.Zero(t, errno)
	require.Equal(t, byte(1), resident[0]&1, "the partial first block goes through the page cache")
	require.Equal(t, byte(1), resident[len(resident)-1]&1, "the partial last block goes through the page cache")
	cached := 0
	for _, r := range resident[1 : len(resident)-1] {
		cached += int(r & 1)
	}
	require.Zero(t, cached, "whole blocks written directly are not in the page cache")
}
