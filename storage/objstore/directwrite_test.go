package objstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDirectRangeIsTheWholeBlocksOfALargeWrite(t *testing.T) {
	for _, c := range []struct {
		off    int64
		n      int
		lo, hi int64
		ok     bool
	}{
		{0, 4 << 20, 0, 4 << 20, true},
		{1, 4 << 20, 4096, 4 << 20, true},
		{4095, 2<<20 + 2, 4096, 2<<20 + 4096, true},
		{100, minDirectBytes, 4096, minDirectBytes, false}, // one block short of the minimum
		{0, 4000, 0, 0, false},
		{5000, 3000, 8192, 4096, false}, // no whole block inside
	} {
		lo, hi, ok := directRange(c.off, c.n)
		require.Equal(t, c.ok, ok, "off %d n %d", c.off, c.n)
		if ok {
			require.Equal(t, [2]int64{c.lo, c.hi}, [2]int64{lo, hi}, "off %d n %d", c.off, c.n)
		}
	}
}

func TestTheStagingPoolHandsOutAtMostItsBound(t *testing.T) {
	p := newChunkPool(2, 8192)
	a, ok := p.get()
	require.True(t, ok)
	b, ok := p.get()
	require.True(t, ok)
	_, ok = p.get()
	require.False(t, ok, "a third buffer past the bound of two")
	for _, buf := range [][]byte{a, b} {
		require.Len(t, buf, 8192)
		require.Zero(t, addrOf(buf)%directAlign, "staging buffers are block-aligned")
	}
	p.put(a)
	c, ok := p.get()
	require.True(t, ok)
	require.Equal(t, addrOf(a), addrOf(c), "a freed buffer is reused, not reallocated")
	p.put(b)
	p.put(c)
}

// TestLargeWritesReadBackExactlyWhateverTheirAlignment writes a file the way WAL segments are
// written (frames of small and large pieces at unaligned offsets, several at once) and compares
// every byte read back with what was written.
func TestLargeWritesReadBackExactlyWhateverTheirAlignment(t *testing.T) {
	ctx := context.Background()
	s, err := NewLocal(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, s.PutIfAbsent(ctx, "seg", nil))
	w, err := s.OpenWriter(ctx, "seg", WriterOptions{Direct: true})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	var want []byte
	type write struct {
		p   []byte
		off int64
	}
	var writes []write
	for len(want) < 40<<20 {
		n := 1 + rng.IntN(3000) // small pieces: framing, metadata
		if rng.IntN(3) == 0 {
			n = minDirectBytes + rng.IntN(9<<20) // large column buffers, some past a staging buffer
		}
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		writes = append(writes, write{p: p, off: int64(len(want))})
		want = append(want, p...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(writes))
	for i := range 3 { // neighbouring writes at once, sharing their end blocks
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; j < len(writes); j += 3 {
				errs <- w.WriteAt(ctx, writes[j].p, writes[j].off)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, w.Sync(ctx))
	got, err := s.Get(ctx, "seg")
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the file differs from what was written")
	require.NoError(t, w.Close())
}

// TestARefusedDirectWriteFallsBackToThePageCache: a filesystem that refuses a direct write
// (EINVAL) gets the bytes through the page cache, then every later write too.
func TestARefusedDirectWriteFallsBackToThePageCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewLocal(dir)
	require.NoError(t, err)
	require.NoError(t, s.PutIfAbsent(ctx, "seg", nil))
	ow, err := s.OpenWriter(ctx, "seg", WriterOptions{Direct: true})
	require.NoError(t, err)
	defer ow.Close()
	w := ow.(*localWriter)
	require.NoError(t, w.direct.close()) // replaced by one whose direct writes are refused
	f, err := os.OpenFile(filepath.Join(dir, "seg"), os.O_WRONLY, 0)
	require.NoError(t, err)
	refused := 0
	w.direct = &directWriter{f: f, pwrite: func(p []byte, off int64) error {
		if refused++; refused > 1 { // the first chunk is accepted
			return &os.PathError{Op: "write", Path: "seg", Err: syscall.EINVAL}
		}
		_, err := f.WriteAt(p, off)
		return err
	}}
	p := bytes.Repeat([]byte("direct "), 3*directChunkBytes/7)
	require.NoError(t, w.WriteAt(ctx, p, 3))
	require.True(t, w.direct.disabled.Load())
	require.NoError(t, w.WriteAt(ctx, p, int64(3+len(p))))
	require.Equal(t, 2, refused, "no direct write is tried once one was refused")
	require.NoError(t, w.Sync(ctx))
	got, err := s.Get(ctx, "seg")
	require.NoError(t, err)
	require.True(t, bytes.Equal(append(append(make([]byte, 3), p...), p...), got))

	other := errors.New("disk on fire")
	w.direct = &directWriter{f: f, pwrite: func([]byte, int64) error { return other }}
	require.ErrorIs(t, w.WriteAt(ctx, p, 0), other, "any other error fails the write")
}
