// Generation key files: a sealed generation's keys in order, with _seq, tombstone flag and
// where each key's row lives (docs/format/memwal.md, "Generations"), so reads resolve a key
// without touching any row data.
package shard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
)

// KeyFile is a generation's key file, decoded: keys ascending, one per key.
// Keys, Seqs and Tombs are parallel; shared through the cache, so never modified once decoded.
type KeyFile struct {
	Keys  []string
	Seqs  []uint64
	Tombs []bool
	// Entry-backed generations (format 2) only: the WAL positions holding the rows, where each
	// of those entries is, and per key the index into entries and the row within that entry. Nil
	// for format 1 (key i is row i of the generation's Arrow file).
	entries []uint64
	locs    []walLoc // parallel to entries
	entry   []uint32
	row     []uint32
}

// Key file magics: format 2 with entry objects only (SGK2), or with entry locations (SGK3).
const (
	keyFileMagic          = "SGK2"
	keyFileLocationsMagic = "SGK3"
)

// approxBytes estimates the memory a decoded key file holds (for the object cache).
func (k *KeyFile) approxBytes() int64 {
	n := int64(256 + 48*len(k.Keys) + 48*len(k.entries))
	for _, key := range k.Keys {
		n += int64(len(key))
	}
	return n
}

// Find returns the index of key, or where it would be inserted and false.
func (k *KeyFile) Find(key string) (int, bool) {
	lo, hi := 0, len(k.Keys)
	for lo < hi {
		mid := (lo + hi) / 2
		if k.Keys[mid] < key {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(k.Keys) && k.Keys[lo] == key
}

// encodeKeys writes a format 2 key file (docs/format/memwal.md):
//
//	"SGK2", entry count, entry positions, key count, then per key: key length, key bytes, _seq,
//	flags (bit 0 tombstone), entry index, row — all integers uvarints.
//
// When any entry is a segment frame, the magic is "SGK3" and each entry position is followed by
// its location: segment name length, name bytes (empty: the entry object), frame offset,
// payload length.
func encodeKeys(k *KeyFile) []byte {
	var buf bytes.Buffer
	var tmp [binary.MaxVarintLen64]byte
	put := func(v uint64) { buf.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	withLocs := slices.ContainsFunc(k.locs, func(l walLoc) bool { return l.Segment != "" })
	if withLocs {
		buf.WriteString(keyFileLocationsMagic)
	} else {
		buf.WriteString(keyFileMagic)
	}
	put(uint64(len(k.entries)))
	for i, p := range k.entries {
		put(p)
		if withLocs {
			l := k.locs[i]
			put(uint64(len(l.Segment)))
			buf.WriteString(l.Segment)
			put(uint64(l.Offset))
			put(uint64(l.Length))
		}
	}
	put(uint64(len(k.Keys)))
	for i, key := range k.Keys {
		put(uint64(len(key)))
		buf.WriteString(key)
		put(k.Seqs[i])
		if k.Tombs[i] {
			buf.WriteByte(1)
		} else {
			buf.WriteByte(0)
		}
		put(uint64(k.entry[i]))
		put(uint64(k.row[i]))
	}
	return buf.Bytes()
}

var errCorruptKeys = errors.New("shard: corrupt generation key file")

// keyReader consumes a key file's fields; the first malformed field sticks as err.
type keyReader struct {
	data []byte
	err  bool
}

func (r *keyReader) uvarint() uint64 {
	v, w := binary.Uvarint(r.data)
	if w <= 0 {
		r.err, r.data = true, nil
		return 0
	}
	r.data = r.data[w:]
	return v
}

func (r *keyReader) bytes(n uint64) []byte {
	if n > uint64(len(r.data)) {
		r.err, r.data = true, nil
		return nil
	}
	b := r.data[:n]
	r.data = r.data[n:]
	return b
}

// decodeKeys reads a key file: format 2 (entry-backed) or, when entryBacked is false, format 1
// (count, then per key: key length, key bytes, _seq, flags).
func decodeKeys(data []byte, entryBacked bool) (*KeyFile, error) {
	r := &keyReader{data: data}
	k := &KeyFile{}
	if entryBacked {
		magic := string(r.bytes(uint64(len(keyFileMagic))))
		if magic != keyFileMagic && magic != keyFileLocationsMagic {
			return nil, errCorruptKeys
		}
		n := r.uvarint()
		if n > uint64(len(r.data)) {
			return nil, errCorruptKeys
		}
		k.entries, k.locs = make([]uint64, n), make([]walLoc, n)
		for i := range k.entries {
			k.entries[i] = r.uvarint()
			if i > 0 && k.entries[i] <= k.entries[i-1] {
				return nil, errCorruptKeys
			}
			if magic == keyFileLocationsMagic {
				name := string(r.bytes(r.uvarint()))
				off, length := r.uvarint(), r.uvarint()
				if _, _, ok := ParseSegmentName(name); (name != "" && !ok) || off > 1<<62 || length > 1<<62 {
					return nil, errCorruptKeys
				}
				k.locs[i] = walLoc{Segment: name, Offset: int64(off), Length: int64(length)}
			}
		}
	}
	n := r.uvarint()
	if r.err || n > uint64(len(r.data)) {
		return nil, errCorruptKeys
	}
	k.Keys, k.Seqs, k.Tombs = make([]string, 0, n), make([]uint64, 0, n), make([]bool, 0, n)
	for i := uint64(0); i < n; i++ {
		key := string(r.bytes(r.uvarint()))
		seq := r.uvarint()
		flags := r.bytes(1)
		if r.err || flags[0] > 1 || (i > 0 && key <= k.Keys[len(k.Keys)-1]) {
			return nil, errCorruptKeys
		}
		k.Keys, k.Seqs, k.Tombs = append(k.Keys, key), append(k.Seqs, seq), append(k.Tombs, flags[0]&1 == 1)
		if entryBacked {
			e, row := r.uvarint(), r.uvarint()
			if r.err || e >= uint64(len(k.entries)) || row > 1<<32-1 {
				return nil, errCorruptKeys
			}
			k.entry, k.row = append(k.entry, uint32(e)), append(k.row, uint32(row))
		}
	}
	if len(r.data) != 0 {
		return nil, errCorruptKeys
	}
	return k, nil
}

// EntryKinds counts the WAL entries a format 2 key file references by where they are: frames of
// segments and entry objects.
func (k *KeyFile) EntryKinds() (frames, objects int) {
	for _, l := range k.locs {
		if l.Segment != "" {
			frames++
		} else {
			objects++
		}
	}
	return frames, objects
}
