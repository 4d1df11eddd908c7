package arrowutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// TakeParts selects exactly what joining the parts and taking would, for every column type a
// store holds (strings, integers, floats, booleans, timestamps, binaries, lists, all-null
// columns), in any order, with repeats.
func TestTakePartsEqualsConcatThenTake(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "blob", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		{Name: "tokens", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "never", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	var parts []arrow.RecordBatch
	total := 0
	for p := range 5 {
		b := array.NewRecordBuilder(mem, schema)
		rows := 1 + rng.IntN(40)
		for i := range rows {
			null := rng.IntN(4) == 0
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("p%d-%d", p, i))
			for c := 1; c < 7; c++ {
				if null {
					b.Field(c).AppendNull()
				}
			}
			if !null {
				b.Field(1).(*array.Int64Builder).Append(int64(i))
				b.Field(2).(*array.Float32Builder).Append(float32(i) / 2)
				b.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
				b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
				b.Field(5).(*array.BinaryBuilder).Append([]byte{byte(p), byte(i)})
				lb := b.Field(6).(*array.ListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{int32(p), int32(i)}, nil)
			}
			b.Field(7).AppendNull()
		}
		parts = append(parts, b.NewRecordBatch())
		b.Release()
		total += rows
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	indices := make([]int64, 3*total)
	for i := range indices {
		indices[i] = int64(rng.IntN(total))
	}
	joined, err := Concat(schema, parts, mem)
	require.NoError(t, err)
	defer joined.Release()
	want, err := Take(context.Background(), mem, joined, indices)
	require.NoError(t, err)
	defer want.Release()
	got, err := TakeParts(context.Background(), mem, parts, indices)
	require.NoError(t, err)
	defer got.Release()
	require.True(t, got.Schema().Equal(schema))
	require.EqualValues(t, len(indices), got.NumRows())
	for c := range schema.NumFields() {
		require.True(t, array.Equal(want.Column(c), got.Column(c)), "column %s", schema.Field(c).Name)
	}

	_, err = TakeParts(context.Background(), mem, nil, nil)
	require.Error(t, err, "no records")
}
