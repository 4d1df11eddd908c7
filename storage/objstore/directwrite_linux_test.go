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
// filesystem allows it and the writer asked for it: the whole blocks of a large write are not
// left in the page cache, the partial blocks at its ends are; without the option, all are.
func TestALargeWritesWholeBlocksBypassThePageCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewLocal(dir)
	require.NoError(t, err)
	const off = 100 // the first and last blocks are partial
	p := bytes.Repeat([]byte{7}, 4<<20)
	write := func(key string, opts WriterOptions) []byte {
		require.NoError(t, s.PutIfAbsent(ctx, key, nil))
		w, err := s.OpenWriter(ctx, key, opts)
		require.NoError(t, err)
		defer w.Close()
		if opts.Direct && w.(*localWriter).direct == nil {
			t.Skip("this filesystem refuses O_DIRECT: every write goes through the page cache")
		}
		require.NoError(t, w.WriteAt(ctx, p, off))
		return residentPages(t, filepath.Join(dir, key), off+len(p))
	}

	resident := write("direct", WriterOptions{Direct: true})
	require.Equal(t, byte(1), resident[0], "the partial first block goes through the page cache")
	require.Equal(t, byte(1), resident[len(resident)-1], "the partial last block goes through the page cache")
	require.Zero(t, bytes.Count(resident[1:len(resident)-1], []byte{1}), "whole blocks written directly are not in the page cache")

	resident = write("cached", WriterOptions{})
	require.Equal(t, len(resident), bytes.Count(resident, []byte{1}), "without the option every block goes through the page cache")
}

// residentPages says, per page of path's first n bytes, whether it is in the page cache (1) or
// not (0).
func residentPages(t *testing.T, path string, n int) []byte {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)
	pageSize := os.Getpagesize()
	resident := make([]byte, (n+pageSize-1)/pageSize)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&resident[0])))
	require.Zero(t, errno)
	for i := range resident {
		resident[i] &= 1
	}
	return resident
}
