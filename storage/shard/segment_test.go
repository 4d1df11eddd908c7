package shard

import (
	"bytes"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeFrame returns the whole frame holding payload for position pos (the writer writes the
// header and the payload separately).
func encodeFrame(pos uint64, payload []byte) []byte {
	return append(frameHeader(pos, len(payload), crc32.Checksum(payload, castagnoli)), payload...)
}

func TestSegmentScanStopsAtTheFirstFrameThatIsNotIntact(t *testing.T) {
	var seg []byte
	var offsets []int64
	for pos, payload := range []string{"one", "", "three three three"} {
		offsets = append(offsets, int64(len(seg)))
		seg = append(seg, encodeFrame(uint64(pos+10), []byte(payload))...)
	}
	frames, valid := scanSegment(seg)
	require.Len(t, frames, 3)
	require.EqualValues(t, len(seg), valid)
	for i, f := range frames {
		require.EqualValues(t, i+10, f.pos)
		require.Equal(t, offsets[i], f.offset)
	}
	require.Equal(t, "three three three", string(frames[2].payload))

	damaged := func(name string, b []byte, want int) {
		t.Helper()
		frames, valid := scanSegment(b)
		require.Len(t, frames, want, name)
		if want < 3 {
			require.Equal(t, offsets[want], valid, name)
		}
	}
	damaged("truncated payload", seg[:len(seg)-1], 2)
	damaged("truncated header", seg[:offsets[2]+FrameHeaderSize-1], 2)
	flipped := bytes.Clone(seg)
	flipped[offsets[1]+FrameHeaderSize-1] ^= 1 // header checksum
	damaged("header bit flip", flipped, 1)
	flipped = bytes.Clone(seg)
	flipped[offsets[2]+FrameHeaderSize+3] ^= 1 // payload
	damaged("payload bit flip", flipped, 2)
	zeroed := append(bytes.Clone(seg[:offsets[1]]), make([]byte, 64)...)
	zeroed = append(zeroed, seg[offsets[1]:]...)
	damaged("a gap of zeros (an unwritten frame)", zeroed, 1)
	damaged("empty", nil, 0)

	b := encodeFrame(7, []byte("x"))
	payload, err := checkFrame(b, "s", 7, walLoc{Segment: "seg", Length: 1})
	require.NoError(t, err)
	require.Equal(t, "x", string(payload))
	_, err = checkFrame(b, "s", 8, walLoc{Segment: "seg", Length: 1})
	require.ErrorContains(t, err, "no intact frame for position 8", "a frame is checked against the position it should hold")
}

func TestSegmentNames(t *testing.T) {
	name := SegmentName(3, 1200)
	epoch, first, ok := ParseSegmentName(name)
	require.True(t, ok)
	require.EqualValues(t, 3, epoch)
	require.EqualValues(t, 1200, first)
	for _, bad := range []string{"", "x.wal", strings.Replace(name, "-", "_", 1), strings.TrimSuffix(name, ".wal"), "../" + name} {
		_, _, ok := ParseSegmentName(bad)
		require.False(t, ok, bad)
	}
}

func FuzzScanSegment(f *testing.F) {
	f.Add(append(encodeFrame(1, []byte("a")), encodeFrame(2, nil)...))
	f.Add([]byte(frameMagic))
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		frames, valid := scanSegment(data)
		require.LessOrEqual(t, valid, int64(len(data)))
		var again []byte
		for _, fr := range frames {
			require.EqualValues(t, len(again), fr.offset)
			again = append(again, encodeFrame(fr.pos, fr.payload)...)
		}
		require.True(t, bytes.Equal(data[:valid], again), "what scans as intact frames re-encodes to the same bytes")
	})
}
