package shard

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzDecodeKeys(f *testing.F) {
	v2 := encodeKeys(&KeyFile{Keys: []string{"a", "b"}, Seqs: []uint64{7, 9}, Tombs: []bool{false, true},
		entries: []uint64{3, 5}, entry: []uint32{1, 0}, row: []uint32{0, 41}})
	f.Add(v2, true)
	v3 := encodeKeys(&KeyFile{Keys: []string{"a", "b"}, Seqs: []uint64{7, 9}, Tombs: []bool{false, true},
		entries: []uint64{3, 5}, locs: []walLoc{{}, {Segment: SegmentName(2, 5), Offset: 4096, Length: 600}},
		entry: []uint32{1, 0}, row: []uint32{0, 41}})
	f.Add(v3, true)
	f.Add([]byte{2, 1, 'a', 7, 0, 1, 'b', 9, 1}, false) // format 1
	f.Add([]byte(keyFileMagic), true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, data []byte, entryBacked bool) {
		k, err := decodeKeys(data, entryBacked)
		if err != nil {
			return
		}
		for i := 1; i < len(k.Keys); i++ {
			require.Less(t, k.Keys[i-1], k.Keys[i])
		}
		if entryBacked {
			for i := range k.Keys {
				require.Less(t, int(k.entry[i]), len(k.entries))
			}
			again, err := decodeKeys(encodeKeys(k), true)
			require.NoError(t, err)
			require.Equal(t, k, again, "what decodes encodes to the same key file")
		}
	})
}
