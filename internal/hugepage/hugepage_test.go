package hugepage

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheHintCoversOnlyTheBuffersWholeHugePages(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		name           string
		start, n       uintptr
		wantLo, wantHi uintptr
	}{
		{"aligned", 4 * MiB, 8 * MiB, 4 * MiB, 12 * MiB},
		{"unaligned at both ends", 4*MiB + 4096, 8 * MiB, 6 * MiB, 12 * MiB},
		{"shorter than one whole page", 4*MiB + 4096, 2 * MiB, 6 * MiB, 6 * MiB},
		{"ends on a boundary", 3 * MiB, 5 * MiB, 4 * MiB, 8 * MiB},
	} {
		lo, hi := interior(c.start, c.n)
		require.Equal(t, [2]uintptr{c.wantLo, c.wantHi}, [2]uintptr{lo, hi}, c.name)
		require.True(t, lo >= c.start && hi <= c.start+c.n, "%s: the hint stays inside the buffer", c.name)
	}
}

func TestSmallBuffersAreNotHinted(t *testing.T) {
	buf := make([]byte, MinBytes-1)
	done, err := prefer(buf)
	require.NoError(t, err)
	done()
}

func TestReadFullFillsTheBufferWhateverTheHint(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789abcdef"), (9<<20)/16)
	buf := make([]byte, len(src))
	n, err := ReadFull(bytes.NewReader(src), buf)
	require.NoError(t, err)
	require.Equal(t, len(src), n)
	require.True(t, bytes.Equal(src, buf))

	short := make([]byte, len(src)+1)
	_, err = ReadFull(bytes.NewReader(src), short)
	require.Error(t, err, "a short body is io.ErrUnexpectedEOF, as with io.ReadFull")
}
