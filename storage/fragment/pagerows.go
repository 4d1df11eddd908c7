// Rows of flat columns decoded straight from their data pages: a run of rows of one row group
// (one row for a get, a few hundred for a listing's page or an item's events) is found through
// the offset index, and each page holding part of it is decoded sequentially from the run's
// first row — definition levels, then PLAIN values or dictionary indices — into the read's
// pointValues. Dictionaries are decoded once and cached with where each entry starts, so an
// entry is found without walking the ones before it.
package fragment

import (
	"encoding/binary"
	"math/bits"
	"sort"

	"github.com/apache/arrow-go/v18/parquet"

	"github.com/strata-store/strata/storage/cache"
)

// dictionary is a column chunk's decompressed dictionary page (PLAIN values) and, for
// BYTE_ARRAY values, the offset of each entry's 4-byte length prefix.
type dictionary struct {
	values []byte
	n      int
	width  int      // fixed-width entries' width (0: BYTE_ARRAY)
	starts []uint32 // BYTE_ARRAY entries' offsets in values
}

// newDictionary indexes n PLAIN values of physical type phys; values is kept, not copied.
func newDictionary(values []byte, n int, phys parquet.Type) (*dictionary, error) {
	d := &dictionary{values: values, n: n}
	switch phys {
	case parquet.Types.ByteArray:
		if len(values) > maxPageBytes {
			return nil, errPage
		}
		d.starts = make([]uint32, n)
		pos := 0
		for k := range n {
			if len(values)-pos < 4 {
				return nil, errPage
			}
			l := binary.LittleEndian.Uint32(values[pos:])
			if uint64(l) > uint64(len(values)-pos-4) {
				return nil, errPage
			}
			d.starts[k] = uint32(pos)
			pos += 4 + int(l)
		}
	case parquet.Types.Int32, parquet.Types.Float:
		d.width = 4
	case parquet.Types.Int64, parquet.Types.Double:
		d.width = 8
	default:
		return nil, errPageUnsupported // BOOLEAN and the wide types are never dictionary-encoded here
	}
	if d.width > 0 && len(values)/d.width < n {
		return nil, errPage
	}
	return d, nil
}

// entry is dictionary value k.
func (d *dictionary) entry(k uint64) ([]byte, error) {
	if k >= uint64(d.n) {
		return nil, errPage
	}
	if d.width > 0 {
		return d.values[int(k)*d.width : int(k+1)*d.width], nil
	}
	s := int(d.starts[k])
	l := int(binary.LittleEndian.Uint32(d.values[s:])) // checked by newDictionary
	return d.values[s+4 : s+4+l], nil
}

// bytes is what the dictionary holds, for the cache's accounting.
func (d *dictionary) bytes() int64 { return int64(len(d.values) + 4*len(d.starts)) }

// boolBytes are BOOLEAN values as the one byte pointValues.appendValue takes.
var boolBytes = [2][]byte{{0}, {1}}

// valueReader reads a data page's stored (non-null) values in order.
type valueReader struct {
	plain   []byte // PLAIN pages: the values section
	width   int    // PLAIN fixed-width values' width (0: BYTE_ARRAY or BOOLEAN)
	boolean bool
	pos     int // PLAIN BYTE_ARRAY: where the next value's length prefix is
	i       int // PLAIN fixed-width and BOOLEAN: the next value's index
	dict    *dictionary
	indices hybrid // dictionary pages: the entries' indices
}

// init positions r at stored value first of a page's values section, encoded as encoding
// (dict: the chunk's dictionary, for dictionary-encoded pages).
func (r *valueReader) init(values []byte, encoding int32, phys parquet.Type, dict *dictionary, first int) error {
	*r = valueReader{}
	switch encoding {
	case encPlain:
		r.plain = values
		switch phys {
		case parquet.Types.Boolean:
			r.boolean, r.i = true, first
		case parquet.Types.Int32, parquet.Types.Float:
			r.width, r.i = 4, first
		case parquet.Types.Int64, parquet.Types.Double:
			r.width, r.i = 8, first
		case parquet.Types.ByteArray:
			for range first {
				if _, err := r.next(); err != nil {
					return err
				}
			}
		default:
			return errPageUnsupported
		}
		return nil
	case encPlainDict, encRLEDictionary:
		if dict == nil {
			return errPage
		}
		if len(values) < 1 {
			return errPage
		}
		indices, err := newHybrid(values[1:], int(values[0]))
		if err != nil {
			return err
		}
		r.dict, r.indices = dict, indices
		return r.indices.skip(first)
	}
	return errPageUnsupported
}

// next is the next stored value: its PLAIN bytes (little-endian numbers, one byte 0/1 for a
// BOOLEAN), pointing into the page or the dictionary.
func (r *valueReader) next() ([]byte, error) {
	switch {
	case r.dict != nil:
		k, err := r.indices.next()
		if err != nil {
			return nil, err
		}
		return r.dict.entry(k)
	case r.boolean:
		if r.i < 0 || r.i/8 >= len(r.plain) {
			return nil, errPage
		}
		b := r.plain[r.i/8] >> (r.i % 8) & 1
		r.i++
		return boolBytes[b], nil
	case r.width > 0:
		if r.i < 0 || r.i >= len(r.plain)/r.width {
			return nil, errPage
		}
		v := r.plain[r.i*r.width : (r.i+1)*r.width]
		r.i++
		return v, nil
	default: // BYTE_ARRAY
		if len(r.plain)-r.pos < 4 {
			return nil, errPage
		}
		n := binary.LittleEndian.Uint32(r.plain[r.pos:])
		if uint64(n) > uint64(len(r.plain)-r.pos-4) {
			return nil, errPage
		}
		v := r.plain[r.pos+4 : r.pos+4+int(n)]
		r.pos += 4 + int(n)
		return v, nil
	}
}

// pageRowReader reads rows of one data page of a flat column in order: nulls from the
// definition levels, values from a valueReader.
type pageRowReader struct {
	maxDef int16
	levels hybrid
	values valueReader
}

// init positions r at row from of a data page (decompressed body, header h) of a flat column
// with maxDef (0 or 1) and physical type phys; dict is the chunk's dictionary (nil: not needed
// or not loaded yet — a dictionary-encoded page then answers errPage).
func (r *pageRowReader) init(body []byte, h pageHeader, maxDef int16, phys parquet.Type, dict *dictionary, from int) error {
	if from < 0 || from > int(h.numValues) || maxDef < 0 || maxDef > 1 {
		return errPage
	}
	r.maxDef, r.levels = maxDef, hybrid{}
	values, first := body, from
	if maxDef > 0 {
		if h.defEncoding != encRLE {
			return errPageUnsupported
		}
		if len(body) < 4 {
			return errPage
		}
		n := binary.LittleEndian.Uint32(body)
		if uint64(n) > uint64(len(body)-4) {
			return errPage
		}
		var err error
		if r.levels, err = newHybrid(body[4:4+n], bits.Len16(uint16(maxDef))); err != nil {
			return err
		}
		// The stored values before row from are the levels before it that equal maxDef.
		if first, err = r.levels.count(from, uint64(maxDef)); err != nil {
			return err
		}
		values = body[4+n:]
	}
	return r.values.init(values, h.encoding, phys, dict, first)
}

// next is the next row: null, or its value's PLAIN bytes.
func (r *pageRowReader) next() (null bool, v []byte, err error) {
	if r.maxDef > 0 {
		d, err := r.levels.next()
		if err != nil {
			return false, nil, err
		}
		if d < uint64(r.maxDef) {
			return true, nil, nil
		}
	}
	v, err = r.values.next()
	return false, v, err
}

// appendRunValues appends rows [run.first, run.first+run.n) of column c (rgRows rows in its row
// group) to values, decoding each page holding part of the run once, from window.
func (c *pageColumn) appendRunValues(values *pointValues, pages []pageLoc, window *pageWindows, run rowRun, rgRows int64) error {
	if c.desc == nil { // the fragment predates the column
		for range run.n {
			values.appendNull()
		}
		return nil
	}
	p := sort.Search(len(pages), func(i int) bool { return pages[i].firstRow > run.first }) - 1
	if p < 0 {
		return errPage
	}
	for row, end := run.first, run.first+run.n; row < end; p++ {
		if p >= len(pages) {
			return errPage
		}
		loc, pageEnd := pages[p], rgRows
		if p+1 < len(pages) {
			pageEnd = pages[p+1].firstRow
		}
		if row < loc.firstRow || pageEnd <= row || pageEnd > rgRows {
			return errPage
		}
		to := min(end, pageEnd)
		if err := c.appendPageRows(values, window, loc, int(row-loc.firstRow), int(to-loc.firstRow)); err != nil {
			return err
		}
		row = to
	}
	return nil
}

// appendPageRows appends rows [from, to) of the data page at loc to values.
func (c *pageColumn) appendPageRows(values *pointValues, window *pageWindows, loc pageLoc, from, to int) error {
	page, err := window.slice(loc.offset, int64(loc.size))
	if err != nil {
		return err
	}
	h, err := decodePageHeader(page)
	if err != nil {
		return err
	}
	if h.typ != pageData {
		return errPageUnsupported
	}
	if to > int(h.numValues) {
		return errPage
	}
	var dict *dictionary
	if h.encoding == encPlainDict || h.encoding == encRLEDictionary {
		if dict, err = c.dictionary(window); err != nil {
			return err
		}
	}
	body, done, err := pageBody(page, h, c.codec)
	if err != nil {
		return err
	}
	defer done() // every value is copied into values first
	var r pageRowReader
	if err := r.init(body, h, c.desc.MaxDefinitionLevel(), c.desc.PhysicalType(), dict, from); err != nil {
		return err
	}
	for range to - from {
		null, v, err := r.next()
		if err != nil {
			return err
		}
		if null {
			values.appendNull()
			continue
		}
		if err := values.appendValue(c.typ, v); err != nil {
			return err
		}
	}
	return nil
}

// cachedDictionary reports whether column c's chunk's decoded dictionary is at hand: loaded by
// this read already, or in the cache (then loaded from it).
func (c *pageColumn) cachedDictionary() bool {
	if c.dict == nil {
		if d, ok := cache.Get[*dictionary](c.cache, "dictionary", dictionaryKey(c.path, c.rowGroup, c.leaf)); ok {
			c.dict = d
		}
	}
	return c.dict != nil
}

// dictionary returns column c's chunk's dictionary: cached, or read from window, decoded and
// cached.
func (c *pageColumn) dictionary(window *pageWindows) (*dictionary, error) {
	if c.cachedDictionary() {
		return c.dict, nil
	}
	if !c.chunk.hasDict {
		return nil, errPage
	}
	at := c.chunk.dictAt
	page, err := window.slice(at, c.chunk.dataAt-at)
	if err != nil {
		return nil, err
	}
	h, err := decodePageHeader(page)
	if err != nil {
		return nil, err
	}
	if h.typ != pageDictionary || h.numValues > maxDictionaryRows {
		return nil, errPage
	}
	if h.encoding != encPlain && h.encoding != encPlainDict {
		return nil, errPageUnsupported
	}
	body, done, err := pageBody(page, h, c.codec)
	if err != nil {
		return nil, err
	}
	d, err := newDictionary(append([]byte(nil), body...), int(h.numValues), c.desc.PhysicalType()) // kept past the pooled buffer
	done()
	if err != nil {
		return nil, err
	}
	c.dict = d
	cache.Add(c.cache, "dictionary", dictionaryKey(c.path, c.rowGroup, c.leaf), d, d.bytes())
	return d, nil
}
