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

// Rows selected in runs are copied run by run, and the result is exactly what taking them row by
// row gives, for every column type (nested ones too), from parts that are themselves slices of
// larger records, with runs crossing from one part into the next; selections of short runs or
// out-of-range rows are left to the row-by-row take.
func TestTakePartsCopiesRunsExactlyAsTakingRowByRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	relation := arrow.StructOf(
		arrow.Field{Name: "target_id", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "text", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "tokens", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "relations", Type: arrow.ListOf(relation), Nullable: true},
		{Name: "never", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "label", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "hash", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
		{Name: "empty", Type: arrow.BinaryTypes.Binary},
	}, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	total := 0
	for p := range 6 {
		b := array.NewRecordBuilder(mem, schema)
		rows := rng.IntN(300) // an empty part now and then
		for i := range rows {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("p%d-%d", p, i))
			if rng.IntN(5) == 0 {
				for c := 1; c < 6; c++ {
					b.Field(c).AppendNull()
				}
			} else {
				b.Field(1).(*array.Int64Builder).Append(int64(i))
				b.Field(2).(*array.BooleanBuilder).Append(i%3 == 0)
				b.Field(3).(*array.LargeStringBuilder).Append(fmt.Sprintf("text %d of part %d", i, p))
				lb := b.Field(4).(*array.ListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{int32(p), int32(i), 7}[:i%4], nil)
				rb := b.Field(5).(*array.ListBuilder)
				rb.Append(true)
				sb := rb.ValueBuilder().(*array.StructBuilder)
				for r := range i % 3 {
					sb.Append(true)
					sb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("t%d", r))
					sb.FieldBuilder(1).(*array.Float32Builder).Append(float32(r))
				}
			}
			b.Field(6).AppendNull()
			if i%7 == 0 {
				b.Field(7).AppendNull()
				b.Field(8).AppendNull()
			} else {
				require.NoError(t, b.Field(7).(*array.BinaryDictionaryBuilder).AppendString(fmt.Sprintf("label %d", (i+p)%4)))
				b.Field(8).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(p), byte(i), byte(i >> 8)})
			}
			b.Field(9).(*array.BinaryBuilder).Append(nil) // empty values: no value bytes at all
		}
		whole := b.NewRecordBatch()
		b.Release()
		// Every other part is a slice of its record, so its columns start at an offset.
		if p%2 == 1 && rows > 10 {
			parts = append(parts, whole.NewSlice(5, int64(rows)-3))
			whole.Release()
		} else {
			parts = append(parts, whole)
		}
		total += int(parts[len(parts)-1].NumRows())
	}
	joined, err := Concat(schema, parts, mem)
	require.NoError(t, err)
	defer joined.Release()

	check := func(indices []int64, copied bool) {
		t.Helper()
		_, ok := rowRunsOf(parts, indices)
		require.Equal(t, copied, ok, "copied run by run")
		want, err := takeRows(context.Background(), mem, joined, indices)
		require.NoError(t, err)
		defer want.Release()
		got, err := TakeParts(context.Background(), mem, parts, indices)
		require.NoError(t, err)
		defer got.Release()
		require.True(t, got.Schema().Equal(schema))
		require.EqualValues(t, len(indices), got.NumRows())
		one, err := Take(context.Background(), mem, joined, indices)
		require.NoError(t, err)
		defer one.Release()
		for c := range schema.NumFields() {
			requireSameValues(t, want.Column(c), got.Column(c), schema.Field(c).Name)
			requireSameValues(t, want.Column(c), one.Column(c), schema.Field(c).Name+" (Take of one record)")
		}
	}
	for trial := range 20 {
		// Runs of 16 to 200 rows starting anywhere (across part boundaries too), some repeated.
		var indices []int64
		for len(indices) < 2000 {
			start, n := int64(rng.IntN(total)), int64(16+rng.IntN(185))
			for x := start; x < min(start+n, int64(total)); x++ {
				indices = append(indices, x)
			}
		}
		check(indices, true)
		if trial%5 == 0 {
			scattered := make([]int64, 500)
			for i := range scattered {
				scattered[i] = int64(rng.IntN(total))
			}
			check(scattered, false)
		}
	}
	check([]int64{0, 1, 2}, false) // too few rows to be worth it
	_, ok := rowRunsOf(parts, append(make([]int64, 40), int64(total)))
	require.False(t, ok, "an index out of range is left to the take, which reports it")
	_, err = TakeParts(context.Background(), mem, parts, append(make([]int64, 40), int64(total)))
	require.Error(t, err)
}

// requireSameValues asserts that a and b hold the same values: dictionary columns row by row
// (joining or concatenating dictionaries may order their entries differently), others exactly.
func requireSameValues(t *testing.T, a, b arrow.Array, name string) {
	t.Helper()
	if _, ok := a.(*array.Dictionary); !ok {
		require.True(t, array.Equal(a, b), "column %s", name)
		return
	}
	require.Equal(t, a.Len(), b.Len(), "column %s", name)
	for i := range a.Len() {
		require.Equal(t, a.IsNull(i), b.IsNull(i), "column %s row %d", name, i)
		require.Equal(t, a.ValueStr(i), b.ValueStr(i), "column %s row %d", name, i)
	}
}

// Columns whose arrays lack a buffer they could have (strings that are all empty, with no value
// bytes at all; a column without a validity bitmap next to one with nulls) are copied run by run
// all the same.
func TestTakePartsCopiesRunsOfArraysWithoutOptionalBuffers(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "empty", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	const rows = 40
	part := func(withNulls bool) arrow.RecordBatch {
		offsets := memory.NewBufferBytes(make([]byte, 4*(rows+1))) // every offset 0
		empty := array.NewData(arrow.BinaryTypes.String, rows, []*memory.Buffer{nil, offsets, nil}, nil, 0, 0)
		defer empty.Release()
		b := array.NewInt32Builder(mem)
		defer b.Release()
		for i := range rows {
			if withNulls && i%3 == 0 {
				b.AppendNull()
			} else {
				b.Append(int32(i))
			}
		}
		n := b.NewArray()
		defer n.Release()
		e := array.MakeFromData(empty)
		defer e.Release()
		return array.NewRecordBatch(schema, []arrow.Array{e, n}, rows)
	}
	parts := []arrow.RecordBatch{part(true), part(false)}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	var indices []int64
	for x := int64(10); x < 70; x++ {
		indices = append(indices, x)
	}
	_, ok := rowRunsOf(parts, indices)
	require.True(t, ok)
	got, err := TakeParts(context.Background(), mem, parts, indices)
	require.NoError(t, err)
	defer got.Release()
	want, err := takePartsRowByRow(context.Background(), mem, schema, parts, indices)
	require.NoError(t, err)
	defer want.Release()
	require.True(t, array.RecordEqual(want, got), "want %v\ngot  %v", want, got)
}
