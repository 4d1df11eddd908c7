package arrowutil

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

func TestConcatAndTake(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	mk := func(vals ...int64) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(vals, nil)
		return b.NewRecordBatch()
	}
	a, b := mk(1, 2), mk(3)
	defer a.Release()
	defer b.Release()
	all, err := Concat(schema, []arrow.RecordBatch{a, b}, mem)
	require.NoError(t, err)
	defer all.Release()
	require.EqualValues(t, 3, all.NumRows())
	sel, err := Take(context.Background(), mem, all, []int64{2, 0})
	require.NoError(t, err)
	defer sel.Release()
	require.Equal(t, []int64{3, 1}, sel.Column(0).(*array.Int64).Int64Values())
	empty, err := Concat(schema, nil, mem)
	require.NoError(t, err)
	require.Zero(t, empty.NumRows())
	empty.Release()
}

func TestRecordBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil))
	defer b.Release()
	for i := range 100 {
		b.Field(0).(*array.StringBuilder).Append("0123456789")
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int64Builder).AppendValues([]int64{int64(i), 2}, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	n := RecordBytes(rec)
	// 1,000 string bytes + 101 offsets; 101 list offsets + 200 int64s: at least the data.
	require.GreaterOrEqual(t, n, int64(1000+101*4+101*4+200*8))
	require.Less(t, n, int64(8<<10))
}
