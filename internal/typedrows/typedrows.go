// Package typedrows builds test rows of a schema holding every column type a fragment's point
// read meets (flat ones of each width, a large string, lists, a struct), with the table's _seq
// and _tombstone columns. Test-only: the fragment and table tests share it.
package typedrows

import (
	"fmt"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// WithInternalColumns is user with a table's _seq and _tombstone columns appended.
func WithInternalColumns(user *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema(append(append([]arrow.Field{}, user.Fields()...),
		arrow.Field{Name: "_seq", Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: "_tombstone", Type: arrow.FixedWidthTypes.Boolean}), nil)
}

// Schema is a user schema with every column type a point read meets: flat ones of each width,
// a large string, lists, a struct.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "big", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "tokens", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "meta", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

// Rows builds n rows of Schema (with _seq and _tombstone) with random nulls,
// empty and null lists, and values of varied length.
func Rows(mem memory.Allocator, n int, rng *rand.Rand) arrow.RecordBatch {
	return RowsWith(mem, n, rng, func() bool { return rng.IntN(4) == 0 })
}

// RowsWith is Rows with null deciding whether each nullable value is null.
func RowsWith(mem memory.Allocator, n int, rng *rand.Rand, null func() bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, WithInternalColumns(Schema))
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("k%05d", i))
		if null() {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int32Builder).Append(rng.Int32())
		}
		if null() {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float32Builder).Append(rng.Float32())
		}
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(rng.Int64N(1 << 50)))
		if null() {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.LargeStringBuilder).Append(fmt.Sprintf("%0*d", rng.IntN(3000), i))
		}
		lb := b.Field(5).(*array.ListBuilder)
		if null() {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for range rng.IntN(5) {
				lb.ValueBuilder().(*array.Int32Builder).Append(rng.Int32())
			}
		}
		tb := b.Field(6).(*array.ListBuilder)
		if null() {
			tb.AppendNull()
		} else {
			tb.Append(true)
			for range rng.IntN(3) {
				tb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint(rng.IntN(100)))
			}
		}
		sb := b.Field(7).(*array.StructBuilder)
		if null() {
			sb.AppendNull()
		} else {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int64Builder).Append(rng.Int64())
			if null() {
				sb.FieldBuilder(1).AppendNull()
			} else {
				sb.FieldBuilder(1).(*array.StringBuilder).Append("b")
			}
		}
		if null() {
			b.Field(8).AppendNull()
		} else {
			b.Field(8).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		}
		b.Field(9).(*array.Uint64Builder).Append(1)
		b.Field(10).(*array.BooleanBuilder).Append(false)
	}
	return b.NewRecordBatch()
}
