// The index object: encoding, and decoding in two parts that a reader may fetch separately —
// the head (header, centroids, list offsets) and each list (its rows, vectors and norms) — each
// with its own CRC-32C, every size the header declares checked against what was read before
// anything is allocated for it. So a search can read the head once and then only the lists it
// probes, each verified on its own, and a cache can hold an index a list at a time.
package vecindex

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

const (
	magic         = "SVIX"
	formatVersion = 2
	// HeaderBytes is the fixed header's size: magic, version, dim, metric, lists, rows. A reader
	// learns the head's size (HeadBytes) from it.
	HeaderBytes = 4 + 4 + 4 + 4 + 4 + 8
	crcBytes    = 4
	// MaxLists bounds the lists of one index.
	MaxLists = 1 << 20
	// MaxRows bounds the rows of one index (one fragment's).
	MaxRows = 1 << 31
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode lays the index out as docs/format/vecindex.md describes.
func (ix *Index) encode() []byte {
	h := ix.Head
	out := make([]byte, 0, h.ObjectBytes())
	le := binary.LittleEndian
	out = append(out, magic...)
	out = le.AppendUint32(out, formatVersion)
	out = le.AppendUint32(out, uint32(h.dim))
	out = le.AppendUint32(out, uint32(h.metric))
	out = le.AppendUint32(out, uint32(h.Lists()))
	out = le.AppendUint64(out, h.rows)
	for _, f := range h.centroids {
		out = le.AppendUint32(out, math.Float32bits(f))
	}
	for _, o := range h.offsets {
		out = le.AppendUint64(out, o)
	}
	out = le.AppendUint32(out, crc32.Checksum(out, castagnoli))
	for _, l := range ix.lists {
		start := len(out)
		for _, r := range l.Rows {
			out = le.AppendUint32(out, r)
		}
		for _, f := range l.Vectors {
			out = le.AppendUint32(out, math.Float32bits(f))
		}
		for _, f := range l.Norms {
			out = le.AppendUint32(out, math.Float32bits(f))
		}
		out = le.AppendUint32(out, crc32.Checksum(out[start:], castagnoli))
	}
	return out
}

// header is the fixed header's fields, checked.
type header struct {
	dim    uint64
	metric Metric
	lists  uint64
	rows   uint64
}

func readHeader(data []byte) (header, error) {
	if len(data) < HeaderBytes || string(data[:4]) != magic {
		return header{}, fmt.Errorf("%w: not an index object", ErrCorrupt)
	}
	le := binary.LittleEndian
	version := le.Uint32(data[4:])
	h := header{dim: uint64(le.Uint32(data[8:])), metric: Metric(le.Uint32(data[12:])), lists: uint64(le.Uint32(data[16:])), rows: le.Uint64(data[20:])}
	switch {
	case version != formatVersion:
		return header{}, fmt.Errorf("%w: format version %d (this build reads %d)", ErrCorrupt, version, formatVersion)
	case h.dim < 1 || h.dim > MaxDim || !h.metric.valid() || h.lists > MaxLists || h.rows > MaxRows || h.lists > h.rows || (h.rows > 0 && h.lists == 0):
		return header{}, fmt.Errorf("%w: header out of range (dim %d, metric %d, lists %d, rows %d)", ErrCorrupt, h.dim, h.metric, h.lists, h.rows)
	}
	return h, nil
}

// HeadBytes is the size of the head of the index object whose first HeaderBytes bytes are
// prefix: what a reader fetches before DecodeHead.
func HeadBytes(prefix []byte) (int64, error) {
	h, err := readHeader(prefix)
	if err != nil {
		return 0, err
	}
	// Every term is bounded above (dim ≤ 2^16, lists ≤ 2^20), so the sum fits.
	return int64(HeaderBytes + 4*h.lists*h.dim + 8*(h.lists+1) + crcBytes), nil
}

// DecodeHead reads an index object's head (its first HeadBytes bytes; more are ignored).
func DecodeHead(data []byte) (*Head, error) {
	hd, err := readHeader(data)
	if err != nil {
		return nil, err
	}
	n, _ := HeadBytes(data)
	if int64(len(data)) < n {
		return nil, fmt.Errorf("%w: a head of %d bytes where the header declares %d", ErrCorrupt, len(data), n)
	}
	le := binary.LittleEndian
	body := data[:n-crcBytes]
	if crc32.Checksum(body, castagnoli) != le.Uint32(data[n-crcBytes:]) {
		return nil, fmt.Errorf("%w: head checksum mismatch", ErrCorrupt)
	}
	h := &Head{dim: int(hd.dim), metric: hd.metric, rows: hd.rows, headBytes: n}
	p := body[HeaderBytes:]
	h.centroids = decodeFloats(p, hd.lists*hd.dim)
	p = p[4*hd.lists*hd.dim:]
	h.offsets = make([]uint64, hd.lists+1)
	for i := range h.offsets {
		h.offsets[i] = le.Uint64(p[8*i:])
	}
	if h.offsets[0] != 0 || h.offsets[hd.lists] != hd.rows {
		return nil, fmt.Errorf("%w: list offsets do not span the rows", ErrCorrupt)
	}
	for i := 1; i < len(h.offsets); i++ {
		if h.offsets[i] < h.offsets[i-1] {
			return nil, fmt.Errorf("%w: list offsets decrease", ErrCorrupt)
		}
	}
	return h, nil
}

func decodeFloats(p []byte, n uint64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
	return out
}

// perRow is how many 4-byte words a list stores for each of its rows: the row position, the
// vector, and the norm under Cosine.
func (h *Head) perRow() uint64 {
	if h.metric == Cosine {
		return uint64(h.dim) + 2
	}
	return uint64(h.dim) + 1
}

// ListRange is where list i lies in the object: offset and length.
func (h *Head) ListRange(i int) (at, n int64) {
	start, end := h.offsets[i], h.offsets[i+1]
	return h.headBytes + int64(4*start*h.perRow()) + int64(crcBytes*i), int64(4*(end-start)*h.perRow()) + crcBytes
}

// ObjectBytes is the whole object's size.
func (h *Head) ObjectBytes() int64 {
	return h.headBytes + int64(4*h.rows*h.perRow()) + int64(crcBytes*h.Lists())
}

// DecodeList reads list i from its bytes (exactly ListRange(i) of the object).
func (h *Head) DecodeList(i int, data []byte) (*List, error) {
	if i < 0 || i >= h.Lists() {
		return nil, fmt.Errorf("vecindex: no list %d of %d", i, h.Lists())
	}
	if _, n := h.ListRange(i); int64(len(data)) != n {
		return nil, fmt.Errorf("%w: list %d is %d bytes, the head says %d", ErrCorrupt, i, len(data), n)
	}
	le := binary.LittleEndian
	body := data[:len(data)-crcBytes]
	if crc32.Checksum(body, castagnoli) != le.Uint32(data[len(data)-crcBytes:]) {
		return nil, fmt.Errorf("%w: list %d checksum mismatch", ErrCorrupt, i)
	}
	rows := h.offsets[i+1] - h.offsets[i]
	l := &List{Rows: make([]uint32, rows)}
	for j := range l.Rows {
		l.Rows[j] = le.Uint32(body[4*j:])
	}
	p := body[4*rows:]
	l.Vectors = decodeFloats(p, rows*uint64(h.dim))
	if h.metric == Cosine {
		l.Norms = decodeFloats(p[4*rows*uint64(h.dim):], rows)
	}
	return l, nil
}

// Decode reads a whole index object. Anything that is not an intact object of this format is
// ErrCorrupt, found before anything is allocated in proportion to what the header claims.
func Decode(data []byte) (*Index, error) {
	h, err := DecodeHead(data)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != h.ObjectBytes() {
		return nil, fmt.Errorf("%w: %d bytes where the header declares %d", ErrCorrupt, len(data), h.ObjectBytes())
	}
	ix := &Index{Head: h, lists: make([]*List, h.Lists())}
	for i := range ix.lists {
		at, n := h.ListRange(i)
		if ix.lists[i], err = h.DecodeList(i, data[at:at+n]); err != nil {
			return nil, err
		}
	}
	return ix, nil
}
