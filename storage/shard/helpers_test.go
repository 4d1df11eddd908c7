package shard

import (
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/storage/table"
)

// userSchema is a small store schema: a key, an int and a string column.
var userSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// tableSchema is userSchema as stored: with _seq and _tombstone, as WAL entries hold rows.
var tableSchema = arrow.NewSchema(append(append([]arrow.Field{}, userSchema.Fields()...),
	arrow.Field{Name: table.SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
	arrow.Field{Name: table.TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean}), nil)

func checkedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// rows is user rows (no _seq, no _tombstone) with the given ids and value.
func rows(mem memory.Allocator, ids []string, value int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, userSchema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(value)
		b.Field(2).(*array.StringBuilder).Append("payload-" + id)
	}
	return b.NewRecordBatch()
}

// stampedRows is rows laid out as tableSchema, with _seq = 1.. and no tombstones.
func stampedRows(mem memory.Allocator, ids []string, value int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, tableSchema)
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

// badOffsets is a utf8 array of two values whose offsets go backwards ([0, 3, 1]).
func badOffsets() arrow.Array {
	ob := make([]byte, 12)
	binary.LittleEndian.PutUint32(ob[4:], 3)
	binary.LittleEndian.PutUint32(ob[8:], 1)
	d := array.NewData(arrow.BinaryTypes.String, 2,
		[]*memory.Buffer{nil, memory.NewBufferBytes(ob), memory.NewBufferBytes([]byte("abc"))}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}
