// The index object: encoding, and decoding that checks every size the header declares against
// the object's length before it allocates, and a CRC-32C over the whole object before it trusts
// any of it.
package vecindex

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

const (
	magic         = "SVIX"
	formatVersion = 1
	headerBytes   = 4 + 4 + 4 + 4 + 4 + 8 // magic, version, dim, metric, lists, rows
	trailerBytes  = 4                     // CRC-32C of everything before it
	// MaxLists bounds the lists of one index.
	MaxLists = 1 << 20
	// MaxRows bounds the rows of one index (one fragment's).
	MaxRows = 1 << 31
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode lays the index out as docs/format/vecindex.md describes.
func (ix *Index) encode() []byte {
	lists, n := ix.Lists(), len(ix.rows)
	size := headerBytes + 4*len(ix.centroids) + 8*(lists+1) + 4*n + 4*len(ix.vectors) + 4*len(ix.norms) + trailerBytes
	out := make([]byte, 0, size)
	out = append(out, magic...)
	out = binary.LittleEndian.AppendUint32(out, formatVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(ix.dim))
	out = binary.LittleEndian.AppendUint32(out, uint32(ix.metric))
	out = binary.LittleEndian.AppendUint32(out, uint32(lists))
	out = binary.LittleEndian.AppendUint64(out, uint64(n))
	for _, f := range ix.centroids {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	for _, o := range ix.offsets {
		out = binary.LittleEndian.AppendUint64(out, o)
	}
	for _, r := range ix.rows {
		out = binary.LittleEndian.AppendUint32(out, r)
	}
	for _, f := range ix.vectors {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	for _, f := range ix.norms {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// Decode reads an index object. Anything that is not an intact object of this format is
// ErrCorrupt, found before anything is allocated in proportion to what the header claims.
func Decode(data []byte) (*Index, error) {
	if len(data) < headerBytes+trailerBytes || string(data[:4]) != magic {
		return nil, fmt.Errorf("%w: not an index object", ErrCorrupt)
	}
	le := binary.LittleEndian
	version, dim, metric := le.Uint32(data[4:]), le.Uint32(data[8:]), Metric(le.Uint32(data[12:]))
	lists, rows := uint64(le.Uint32(data[16:])), le.Uint64(data[20:])
	switch {
	case version != formatVersion:
		return nil, fmt.Errorf("%w: format version %d (this build reads %d)", ErrCorrupt, version, formatVersion)
	case dim < 1 || dim > MaxDim || !metric.valid() || lists > MaxLists || rows > MaxRows || lists > rows || (rows > 0 && lists == 0):
		return nil, fmt.Errorf("%w: header out of range (dim %d, metric %d, lists %d, rows %d)", ErrCorrupt, dim, metric, lists, rows)
	}
	// Every term is bounded above (dim ≤ 2^16, lists ≤ 2^20, rows ≤ 2^31), so the sum fits.
	norms := uint64(0)
	if metric == Cosine {
		norms = rows
	}
	want := uint64(headerBytes) + 4*lists*uint64(dim) + 8*(lists+1) + 4*rows + 4*rows*uint64(dim) + 4*norms + trailerBytes
	if uint64(len(data)) != want {
		return nil, fmt.Errorf("%w: %d bytes where the header declares %d", ErrCorrupt, len(data), want)
	}
	body := data[:len(data)-trailerBytes]
	if crc32.Checksum(body, castagnoli) != le.Uint32(data[len(data)-trailerBytes:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	p := body[headerBytes:]
	floats := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(p[4*i:]))
		}
		p = p[4*n:]
		return out
	}
	ix := &Index{dim: int(dim), metric: metric}
	ix.centroids = floats(lists * uint64(dim))
	ix.offsets = make([]uint64, lists+1)
	for i := range ix.offsets {
		ix.offsets[i] = le.Uint64(p[8*i:])
	}
	p = p[8*(lists+1):]
	if ix.offsets[0] != 0 || ix.offsets[lists] != rows {
		return nil, fmt.Errorf("%w: list offsets do not span the rows", ErrCorrupt)
	}
	for i := 1; i < len(ix.offsets); i++ {
		if ix.offsets[i] < ix.offsets[i-1] {
			return nil, fmt.Errorf("%w: list offsets decrease", ErrCorrupt)
		}
	}
	ix.rows = make([]uint32, rows)
	for i := range ix.rows {
		ix.rows[i] = le.Uint32(p[4*i:])
	}
	p = p[4*rows:]
	ix.vectors = floats(rows * uint64(dim))
	if norms > 0 {
		ix.norms = floats(norms)
	}
	return ix, nil
}
