package table_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/table"
)

// Align widens types losslessly (what Parquet files and other writers hand in) and refuses the rest.
func TestAlignWidensOnlyLosslessly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.LargeString},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	batch := func(nType arrow.DataType, atNanos int64) arrow.RecordBatch {
		in := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "n", Type: nType, Nullable: true},
			{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true}}, nil)
		b := array.NewRecordBuilder(mem, in)
		defer b.Release()
		b.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
		switch nb := b.Field(1).(type) {
		case *array.Int32Builder:
			nb.AppendValues([]int32{1, -2}, nil)
		case *array.StringBuilder:
			nb.AppendValues([]string{"1", "2"}, nil)
		}
		b.Field(2).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(atNanos), 0}, nil)
		return b.NewRecordBatch()
	}

	in := batch(arrow.PrimitiveTypes.Int32, 5_000)
	out, err := table.Align(in, want, mem)
	in.Release()
	require.NoError(t, err)
	require.True(t, out.Schema().Equal(want))
	require.Equal(t, "b", out.Column(0).(*array.LargeString).Value(1))
	require.EqualValues(t, -2, out.Column(1).(*array.Int64).Value(1))
	require.EqualValues(t, 5, out.Column(2).(*array.Timestamp).Value(0))
	out.Release()

	in = batch(arrow.BinaryTypes.String, 0)
	_, err = table.Align(in, want, mem)
	in.Release()
	require.ErrorIs(t, err, table.ErrSchema, "a string is not an integer")

	in = batch(arrow.PrimitiveTypes.Int32, 5_001)
	_, err = table.Align(in, want, mem)
	in.Release()
	require.ErrorIs(t, err, table.ErrSchema, "nanoseconds that do not fit in microseconds are refused, not truncated")
}
