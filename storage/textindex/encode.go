// The index object: encoding, and decoding that checks every size the header declares against
// the object's length before it allocates, a CRC-32C over the whole object before it trusts any
// of it, and every posting list's ordinals and counts before a search walks them.
package textindex

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"unicode/utf8"
)

const (
	magic         = "STXI"
	formatVersion = 1
	headerBytes   = 4 + 4 + 4 + 4 + 8 // magic, version, docs, terms, tokens
	trailerBytes  = 4                 // CRC-32C of everything before it
	// MaxDocs bounds the documents of one index (one fragment's rows).
	MaxDocs = 1 << 31
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode lays the index out as docs/format/textindex.md describes.
func (ix *Index) Encode() []byte {
	size := headerBytes + 8*len(ix.rows) + 12*len(ix.terms) + 8 + len(ix.postings) + trailerBytes
	for _, t := range ix.terms {
		size += len(t)
	}
	le := binary.LittleEndian
	out := make([]byte, 0, size)
	out = append(out, magic...)
	out = le.AppendUint32(out, formatVersion)
	out = le.AppendUint32(out, uint32(len(ix.rows)))
	out = le.AppendUint32(out, uint32(len(ix.terms)))
	out = le.AppendUint64(out, ix.tokens)
	for _, r := range ix.rows {
		out = le.AppendUint32(out, r)
	}
	for _, l := range ix.lens {
		out = le.AppendUint32(out, l)
	}
	for i, t := range ix.terms {
		out = le.AppendUint32(out, uint32(len(t)))
		out = le.AppendUint32(out, ix.df[i])
		out = le.AppendUint32(out, uint32(ix.offsets[i+1]-ix.offsets[i]))
	}
	for _, t := range ix.terms {
		out = append(out, t...)
	}
	out = le.AppendUint64(out, uint64(len(ix.postings)))
	out = append(out, ix.postings...)
	return le.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// Decode reads an index object. Anything that is not an intact object of this format is
// ErrCorrupt, found before anything is allocated in proportion to what the header claims.
func Decode(data []byte) (*Index, error) {
	if len(data) < headerBytes+8+trailerBytes || string(data[:4]) != magic {
		return nil, fmt.Errorf("%w: not an index object", ErrCorrupt)
	}
	le := binary.LittleEndian
	version, docs, terms, tokens := le.Uint32(data[4:]), uint64(le.Uint32(data[8:])), uint64(le.Uint32(data[12:])), le.Uint64(data[16:])
	if version != formatVersion {
		return nil, fmt.Errorf("%w: format version %d (this build reads %d)", ErrCorrupt, version, formatVersion)
	}
	// docs and terms are below 2^32, so these sums cannot overflow.
	fixed := uint64(headerBytes) + 8*docs + 12*terms + 8 + trailerBytes
	if docs > MaxDocs || fixed > uint64(len(data)) {
		return nil, fmt.Errorf("%w: header declares %d documents and %d terms in %d bytes", ErrCorrupt, docs, terms, len(data))
	}
	body := data[:len(data)-trailerBytes]
	if crc32.Checksum(body, castagnoli) != le.Uint32(data[len(data)-trailerBytes:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	ix := &Index{tokens: tokens, rows: make([]uint32, docs), lens: make([]uint32, docs),
		terms: make([]string, terms), df: make([]uint32, terms), offsets: make([]uint64, terms+1)}
	p := body[headerBytes:]
	var sumLens uint64
	for i := range ix.rows {
		ix.rows[i] = le.Uint32(p[4*i:])
		if i > 0 && ix.rows[i] <= ix.rows[i-1] {
			return nil, fmt.Errorf("%w: row positions not increasing", ErrCorrupt)
		}
	}
	p = p[4*docs:]
	for i := range ix.lens {
		ix.lens[i] = le.Uint32(p[4*i:])
		sumLens += uint64(ix.lens[i])
	}
	if sumLens != tokens {
		return nil, fmt.Errorf("%w: document lengths sum to %d, the header says %d", ErrCorrupt, sumLens, tokens)
	}
	p = p[4*docs:]
	dict := p[:12*terms]
	p = p[12*terms:]
	var termBytes uint64
	for i := uint64(0); i < terms; i++ {
		termBytes += uint64(le.Uint32(dict[12*i:]))
		ix.df[i] = le.Uint32(dict[12*i+4:])
		ix.offsets[i+1] = ix.offsets[i] + uint64(le.Uint32(dict[12*i+8:]))
	}
	if termBytes+8 > uint64(len(p)) {
		return nil, fmt.Errorf("%w: term bytes overrun the object", ErrCorrupt)
	}
	names := p[:termBytes]
	p = p[termBytes:]
	postingBytes := le.Uint64(p)
	p = p[8:]
	if postingBytes != uint64(len(p)) || ix.offsets[terms] != postingBytes {
		return nil, fmt.Errorf("%w: %d posting bytes where the object holds %d", ErrCorrupt, ix.offsets[terms], len(p))
	}
	ix.postings = append([]byte(nil), p...)
	at := 0
	for i := range ix.terms {
		n := int(le.Uint32(dict[12*i:]))
		t := names[at : at+n]
		at += n
		if n == 0 || n > MaxTermBytes || !utf8.Valid(t) || (i > 0 && string(t) <= ix.terms[i-1]) {
			return nil, fmt.Errorf("%w: term %d is empty, too long, not UTF-8 or out of order", ErrCorrupt, i)
		}
		ix.terms[i] = string(t)
		if err := ix.checkPostings(i); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// checkPostings walks term i's postings: df pairs, ordinals increasing below docs, tf ≥ 1, no
// bytes left over.
func (ix *Index) checkPostings(i int) error {
	p := ix.postings[ix.offsets[i]:ix.offsets[i+1]]
	doc, count := int64(-1), uint32(0)
	for len(p) > 0 {
		delta, n := binary.Uvarint(p)
		if n <= 0 {
			return fmt.Errorf("%w: term %q: bad posting", ErrCorrupt, ix.terms[i])
		}
		p = p[n:]
		tf, m := binary.Uvarint(p)
		if m <= 0 || tf == 0 || tf > uint64(^uint32(0)) {
			return fmt.Errorf("%w: term %q: bad posting", ErrCorrupt, ix.terms[i])
		}
		p = p[m:]
		if count > 0 && delta == 0 {
			return fmt.Errorf("%w: term %q: repeated document", ErrCorrupt, ix.terms[i])
		}
		if delta > uint64(len(ix.rows)) {
			return fmt.Errorf("%w: term %q: document out of range", ErrCorrupt, ix.terms[i])
		}
		doc += int64(delta)
		if count == 0 {
			doc++ // the first delta is the ordinal itself
		}
		if doc >= int64(len(ix.rows)) || uint64(tf) > uint64(ix.lens[doc]) {
			return fmt.Errorf("%w: term %q: document out of range", ErrCorrupt, ix.terms[i])
		}
		count++
	}
	if count != ix.df[i] || count == 0 {
		return fmt.Errorf("%w: term %q: %d postings, the dictionary says %d", ErrCorrupt, ix.terms[i], count, ix.df[i])
	}
	return nil
}
