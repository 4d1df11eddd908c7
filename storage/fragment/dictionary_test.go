package fragment

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/stretchr/testify/require"
)

// A column is written without a dictionary when more than half of its first sampled values
// differ, whatever its type, its nulls or the slice of a batch it is; the check runs for every
// column of every fragment written and allocates nothing.
func TestTheDictionaryChoiceCountsDistinctValuesWithoutAllocating(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const n = 2 * dictionarySample
	build := func(dt arrow.DataType, value func(i int) any) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		for i := range n {
			v := value(i)
			switch b := b.(type) {
			case *array.StringBuilder:
				b.Append(v.(string))
			case *array.LargeStringBuilder:
				b.Append(v.(string))
			case *array.BinaryBuilder:
				b.Append([]byte(v.(string)))
			case *array.Int64Builder:
				b.Append(int64(v.(int)))
			case *array.Int16Builder:
				b.Append(int16(v.(int)))
			case *array.Float64Builder:
				b.Append(float64(v.(int)))
			case *array.BooleanBuilder:
				b.Append(v.(int)%2 == 0)
			}
		}
		return b.NewArray()
	}
	for _, tc := range []struct {
		name     string
		dt       arrow.DataType
		distinct int // distinct values among every run of that many rows
		want     bool
	}{
		{"strings, all distinct", arrow.BinaryTypes.String, n, true},
		{"strings, a third distinct", arrow.BinaryTypes.String, dictionarySample / 3, false},
		{"strings, just over half", arrow.BinaryTypes.String, dictionarySample/2 + 1, true},
		{"large strings", arrow.BinaryTypes.LargeString, n, true},
		{"binary, repeated", arrow.BinaryTypes.Binary, 7, false},
		{"int64, distinct", arrow.PrimitiveTypes.Int64, n, true},
		{"int64, repeated", arrow.PrimitiveTypes.Int64, 100, false},
		{"int16, distinct", arrow.PrimitiveTypes.Int16, n, true},
		{"float64, distinct", arrow.PrimitiveTypes.Float64, n, true},
		{"booleans", arrow.FixedWidthTypes.Boolean, 2, false},
	} {
		arr := build(tc.dt, func(i int) any {
			if tc.dt.ID() == arrow.STRING || tc.dt.ID() == arrow.LARGE_STRING || tc.dt.ID() == arrow.BINARY {
				return fmt.Sprintf("value-%d", i%tc.distinct)
			}
			return i % tc.distinct
		})
		require.Equal(t, tc.want, mostlyDistinct(arr), tc.name)
		require.Zero(t, testing.AllocsPerRun(10, func() { mostlyDistinct(arr) }), "%s: allocations", tc.name)
		// A slice of the batch samples its own values: from row dictionarySample on, the first
		// sampled values of a repeated column are as repeated, of a distinct one as distinct.
		tail := array.NewSlice(arr, dictionarySample, n)
		require.Equal(t, tc.want, mostlyDistinct(tail), "%s, sliced", tc.name)
		tail.Release()
		arr.Release()
	}

	// Nulls count among the sampled values but not as distinct ones.
	b := array.NewStringBuilder(mem)
	for i := range dictionarySample {
		if i%4 == 0 {
			b.Append(fmt.Sprint(i))
		} else {
			b.AppendNull()
		}
	}
	sparse := b.NewArray()
	b.Release()
	require.False(t, mostlyDistinct(sparse), "a quarter of the values, all distinct")
	sparse.Release()

	// An array without a values buffer is left to the writer's default, not read.
	missing := array.NewData(arrow.PrimitiveTypes.Int64, 64, []*memory.Buffer{nil, nil}, nil, 0, 0)
	arr := array.MakeFromData(missing)
	require.False(t, mostlyDistinct(arr))
	arr.Release()
	missing.Release()
}

// A fragment's columns get a dictionary only when their first rows repeat values: distinct ones
// (ids, free text) and columns with no value at all among them are written plain (for the
// latter a dictionary saves nothing, and the writer would hand its encoder a slice header per
// null row).
func TestColumnsWithoutRepeatedValuesAreWrittenWithoutADictionary(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := make([]row, 100)
	for i := range rows {
		rows[i] = row{id: fmt.Sprintf("k%03d", i), value: int64(i % 3), payload: "same", seq: uint64(i + 1)}
	}
	rows[0].tombstone = true // value and payload hold nulls too
	rec := batch(mem, rows)
	defer rec.Release()
	empty := array.MakeArrayOfNull(mem, arrow.BinaryTypes.String, int(rec.NumRows()))
	defer empty.Release()
	withEmpty := array.NewRecordBatch(arrow.NewSchema(append(rec.Schema().Fields(), arrow.Field{Name: "empty", Type: arrow.BinaryTypes.String, Nullable: true}), nil),
		append(rec.Columns(), empty), rec.NumRows())
	defer withEmpty.Release()
	props := parquet.NewWriterProperties(writerProperties(withEmpty, mem, Codec, true)...)
	require.False(t, props.DictionaryEnabledFor("id"), "distinct ids")
	require.False(t, props.DictionaryEnabledFor("empty"), "no values")
	require.True(t, props.DictionaryEnabledFor("value"), "three values")
	require.True(t, props.DictionaryEnabledFor("payload"), "one value")
}
