package fragment

import (
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
)

// FuzzPageDecoders drives arbitrary bytes through every decoder of the page point-read path:
// they return errors, never panic or read out of bounds.
func FuzzPageDecoders(f *testing.F) {
	f.Add([]byte{0x19, 0x1c, 0x16, 0x08, 0x15, 0x80, 0x01, 0x16, 0x00, 0x00, 0x00}, 0, 1)
	f.Add([]byte{0x15, 0x00, 0x15, 0x10, 0x15, 0x10, 0x2c, 0x15, 0x04, 0x15, 0x00, 0x15, 0x06, 0x00, 0x00}, 3, 1)
	f.Add([]byte{0x04, 0x00, 0x00, 0x00, 0x03, 0x0f, 0x02, 0x00, 0x00, 0x00, 'h', 'i'}, 1, 1)
	f.Add([]byte{0x1f, 0xff, 0xff, 0xff, 0xff, 0x0f}, 5, 0)
	f.Fuzz(func(t *testing.T, data []byte, row int, maxDef int) {
		_, _ = decodeOffsetIndex(data)
		h, err := decodePageHeader(data)
		if err == nil {
			h.numValues = max(h.numValues, 0)
		}
		def := int16(maxDef & 1)
		// A page body read from row row&1023 on, as each physical type, PLAIN and through a
		// dictionary (itself from the same bytes).
		dicts := []*dictionary{nil}
		for _, typ := range []parquet.Type{parquet.Types.Int32, parquet.Types.ByteArray} {
			if d, err := newDictionary(data, len(data)&15, typ); err == nil {
				dicts = append(dicts, d)
			}
		}
		for _, typ := range []parquet.Type{parquet.Types.Boolean, parquet.Types.Int32, parquet.Types.Int64, parquet.Types.Float, parquet.Types.Double, parquet.Types.ByteArray} {
			for _, enc := range []int32{encPlain, encRLEDictionary} {
				for _, d := range dicts {
					h := pageHeader{numValues: int32(len(data)), defEncoding: encRLE, encoding: enc}
					var r pageRowReader
					if r.init(data, h, def, typ, d, min(row&1023, len(data))) != nil {
						continue
					}
					for range len(data) {
						if _, _, err := r.next(); err != nil {
							break
						}
					}
				}
			}
		}
		if len(data) > 0 {
			if hy, err := newHybrid(data[1:], int(data[0])); err == nil {
				for range min(row&1023, 1024) {
					if _, err := hy.next(); err != nil {
						break
					}
				}
			}
			if hy, err := newHybrid(data[1:], int(data[0])); err == nil && hy.skip(row&4095) == nil {
				_, _ = hy.next()
			}
			if hy, err := newHybrid(data[1:], int(data[0])); err == nil {
				_, _ = hy.count(row&4095, uint64(maxDef&1))
			}
		}
	})
}
