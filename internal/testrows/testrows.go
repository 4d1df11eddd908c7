// Package testrows is the small store schema and row builders the storage packages' tests share
// (test-only: no production package imports it).
package testrows

import (
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/storage/table"
)

// UserSchema is a small store schema: a key, an int and a string column.
var UserSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// TableSchema is UserSchema as stored: with _seq and _tombstone, as WAL entries hold rows.
var TableSchema = arrow.NewSchema(append(append([]arrow.Field{}, UserSchema.Fields()...),
	arrow.Field{Name: table.SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
	arrow.Field{Name: table.TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean}), nil)

// CheckedAlloc is an Arrow allocator that fails the test when anything allocated is not
// released by the end of it.
func CheckedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// Rows is user rows (no _seq, no _tombstone) with the given ids and value.
func Rows(mem memory.Allocator, ids []string, value int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, UserSchema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(value)
		b.Field(2).(*array.StringBuilder).Append("payload-" + id)
	}
	return b.NewRecordBatch()
}

// StampedRows is Rows laid out as TableSchema, with _seq = 1.. and no tombstones.
func StampedRows(mem memory.Allocator, ids []string, value int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, TableSchema)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(value)
		b.Field(2).(*array.StringBuilder).Append("payload-" + id)
		b.Field(3).(*array.Uint64Builder).Append(uint64(i + 1))
		b.Field(4).(*array.BooleanBuilder).Append(false)
	}
	return b.NewRecordBatch()
}

// BadOffsets is a utf8 array of two values whose offsets go backwards ([0, 3, 1]).
func BadOffsets() arrow.Array {
	ob := make([]byte, 12)
	binary.LittleEndian.PutUint32(ob[4:], 3)
	binary.LittleEndian.PutUint32(ob[8:], 1)
	d := array.NewData(arrow.BinaryTypes.String, 2,
		[]*memory.Buffer{nil, memory.NewBufferBytes(ob), memory.NewBufferBytes([]byte("abc"))}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}
