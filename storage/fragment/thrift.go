// A minimal reader of Thrift's compact protocol, enough to parse the Parquet structures a point
// read needs (page headers, offset indexes) without the general Parquet reader's per-read set-up.
// It never panics: malformed or truncated input is an error.
package fragment

import (
	"encoding/binary"
	"errors"
	"math"
)

var errThrift = errors.New("malformed thrift data")

// Compact protocol type codes.
const (
	tStop    = 0
	tTrue    = 1
	tFalse   = 2
	tByte    = 3
	tI16     = 4
	tI32     = 5
	tI64     = 6
	tDouble  = 7
	tBinary  = 8
	tList    = 9
	tSet     = 10
	tMap     = 11
	tStruct  = 12
	maxDepth = 16
)

// thriftReader reads compact-protocol values from b.
type thriftReader struct {
	b   []byte
	pos int
}

func (r *thriftReader) byte1() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errThrift
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *thriftReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		return 0, errThrift
	}
	r.pos += n
	return v, nil
}

// int reads a zigzag varint (i16, i32 and i64 alike).
func (r *thriftReader) int() (int64, error) {
	u, err := r.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

// field reads a field header after field last: its id and type (tStop at the struct's end).
func (r *thriftReader) field(last int16) (id int16, typ byte, err error) {
	h, err := r.byte1()
	if err != nil || h == tStop {
		return 0, tStop, err
	}
	typ = h & 0x0f
	if delta := h >> 4; delta != 0 {
		return last + int16(delta), typ, nil
	}
	v, err := r.int()
	if err != nil || v < math.MinInt16 || v > math.MaxInt16 {
		return 0, 0, errThrift
	}
	return int16(v), typ, nil
}

// listHeader reads a list or set header: its element type and size (at most the bytes left, as
// every element takes at least one byte).
func (r *thriftReader) listHeader() (elem byte, size int, err error) {
	h, err := r.byte1()
	if err != nil {
		return 0, 0, err
	}
	n := uint64(h >> 4)
	if n == 15 {
		if n, err = r.uvarint(); err != nil {
			return 0, 0, err
		}
	}
	if n > uint64(len(r.b)-r.pos) {
		return 0, 0, errThrift
	}
	return h & 0x0f, int(n), nil
}

// skip skips one value of type typ (depth bounds nesting).
func (r *thriftReader) skip(typ byte, depth int) error {
	if depth > maxDepth {
		return errThrift
	}
	switch typ {
	case tTrue, tFalse:
		return nil // a struct field's bool lives in its type code
	case tByte:
		_, err := r.byte1()
		return err
	case tI16, tI32, tI64:
		_, err := r.uvarint()
		return err
	case tDouble:
		if len(r.b)-r.pos < 8 {
			return errThrift
		}
		r.pos += 8
		return nil
	case tBinary:
		n, err := r.uvarint()
		if err != nil || n > uint64(len(r.b)-r.pos) {
			return errThrift
		}
		r.pos += int(n)
		return nil
	case tList, tSet:
		elem, n, err := r.listHeader()
		if err != nil {
			return err
		}
		for range n {
			if elem == tTrue || elem == tFalse { // list bools take one byte each
				if _, err := r.byte1(); err != nil {
					return err
				}
				continue
			}
			if err := r.skip(elem, depth+1); err != nil {
				return err
			}
		}
		return nil
	case tMap:
		n, err := r.uvarint()
		if err != nil || n > uint64(len(r.b)-r.pos) {
			return errThrift
		}
		if n == 0 {
			return nil
		}
		kv, err := r.byte1()
		if err != nil {
			return err
		}
		for range n {
			if err := r.skip(kv>>4, depth+1); err != nil {
				return err
			}
			if err := r.skip(kv&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case tStruct:
		return r.skipStruct(depth + 1)
	}
	return errThrift
}

func (r *thriftReader) skipStruct(depth int) error {
	var last int16
	for {
		id, typ, err := r.field(last)
		if err != nil || typ == tStop {
			return err
		}
		if err := r.skip(typ, depth); err != nil {
			return err
		}
		last = id
	}
}
