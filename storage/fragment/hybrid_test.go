package fragment

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeHybrid writes values as an RLE/bit-packed hybrid sequence of width-bit values, choosing
// a repeated or a bit-packed run at random. A bit-packed run holds groups of 8 values: only the
// last may be padded (with zeros, never read back). Runs of no values are mixed in, as writers
// may emit them.
func encodeHybrid(rng *rand.Rand, values []uint64, width int) []byte {
	var out []byte
	for i := 0; i < len(values); {
		if rng.IntN(8) == 0 {
			out = binary.AppendUvarint(out, 0) // an empty repeated run
			out = append(out, make([]byte, (width+7)/8)...)
		}
		if rng.IntN(2) == 0 { // repeated: as long as the value repeats
			j := i + 1
			for j < len(values) && values[j] == values[i] {
				j++
			}
			out = binary.AppendUvarint(out, uint64(j-i)<<1)
			for b := range (width + 7) / 8 {
				out = append(out, byte(values[i]>>(8*b)))
			}
			i = j
			continue
		}
		n := min(len(values)-i, 8*(1+rng.IntN(40))) // short only at the end
		groups := (n + 7) / 8
		out = binary.AppendUvarint(out, uint64(groups)<<1|1)
		packed := make([]byte, groups*width)
		for j, v := range values[i : i+n] {
			for b := range width {
				if v>>b&1 == 1 {
					bit := j*width + b
					packed[bit/8] |= 1 << (bit % 8)
				}
			}
		}
		out = append(out, packed...)
		i += n
	}
	return out
}

// skip, count and next against the values encoded, for random widths, values and positions.
func TestHybridSkipAndCountAgreeWithTheValuesEncoded(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 2000 {
		width := []int{0, 1, 1, 1, 2, 3, 7, 8, 13, 20, 32}[rng.IntN(11)]
		n := 1 + rng.IntN(600)
		values := make([]uint64, n)
		distinct := 1 + rng.IntN(4)
		for i := range values {
			if width > 0 {
				values[i] = uint64(rng.IntN(distinct)) * (1<<width - 1) / uint64(max(distinct-1, 1))
			}
		}
		data := encodeHybrid(rng, values, width)

		at := rng.IntN(n)
		h, err := newHybrid(data, width)
		require.NoError(t, err)
		require.NoError(t, h.skip(at), "trial %d", trial)
		got, err := h.next()
		require.NoError(t, err, "trial %d", trial)
		require.Equal(t, values[at], got, "trial %d: width %d, value %d", trial, width, at)

		v := values[rng.IntN(n)]
		want := 0
		for _, x := range values[:at] {
			if x == v {
				want++
			}
		}
		h, _ = newHybrid(data, width)
		equal, err := h.count(at, v)
		require.NoError(t, err)
		require.Equal(t, want, equal, "trial %d: width %d, %d values", trial, width, at)
		got, err = h.next()
		require.NoError(t, err)
		require.Equal(t, values[at], got, "trial %d: the value after the counted ones", trial)
	}
}
