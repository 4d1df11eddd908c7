// Record sizes: the bytes of a record's buffers, for budgets and quotas.
package arrowutil

import "github.com/apache/arrow-go/v18/arrow"

// RecordBytes is the total length of rec's buffers, children and dictionaries included (a
// sliced record counts the buffers it shares whole: an upper bound).
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		n += dataBytes(col.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY { // (Dictionary is a typed nil otherwise)
		n += dataBytes(d.Dictionary())
	}
	return n
}
