package arrowutil

import (
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

func TestNullsAreSharedAndSafeToRelease(t *testing.T) {
	types := []arrow.DataType{
		arrow.BinaryTypes.LargeString,
		arrow.PrimitiveTypes.Int64,
		arrow.ListOf(arrow.BinaryTypes.String),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Float64, Nullable: true}),
	}
	for _, dt := range types {
		a := Nulls(dt, 100)
		b := Nulls(dt, 100)
		require.Same(t, a.Data(), b.Data(), "%s: one length of one type is one shared array", dt)
		require.True(t, arrow.TypeEqual(dt, a.DataType()))
		require.Equal(t, 100, a.Len())
		require.Equal(t, 100, a.NullN())
		// Every holder releases its own reference; the cached array stays valid for the next.
		a.Release()
		b.Release()
		c := Nulls(dt, 100)
		require.Equal(t, 100, c.NullN())
		other := Nulls(dt, 7) // another length replaces the cached one; c stays valid
		require.Equal(t, 7, other.Len())
		require.Equal(t, 100, c.NullN())
		c.Release()
		other.Release()
	}
	big := Nulls(arrow.PrimitiveTypes.Int64, maxCachedNulls+1)
	require.Equal(t, maxCachedNulls+1, big.NullN())
	big.Release()
	// A wide fixed-width type is not kept: the cache stays small whatever the schema.
	vector := arrow.FixedSizeListOf(1536, arrow.PrimitiveTypes.Float32)
	w1, w2 := Nulls(vector, 1000), Nulls(vector, 1000)
	require.NotSame(t, w1.Data(), w2.Data())
	require.Equal(t, 1000, w1.NullN())
	w1.Release()
	w2.Release()
}

func TestConcatSharesColumnsNullInEveryPart(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64},
		{Name: "note", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	mk := func(tag *string, vals ...int64) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(vals, nil)
		for range vals {
			b.Field(1).AppendNull()
			if tag == nil {
				b.Field(2).AppendNull()
			} else {
				b.Field(2).(*array.StringBuilder).Append(*tag)
			}
		}
		return b.NewRecordBatch()
	}
	tag := "t"
	a, b := mk(nil, 1, 2), mk(&tag, 3)
	defer a.Release()
	defer b.Release()
	all, err := Concat(schema, []arrow.RecordBatch{a, b}, mem)
	require.NoError(t, err)
	defer all.Release()
	require.Equal(t, []int64{1, 2, 3}, all.Column(0).(*array.Int64).Int64Values())
	shared := Nulls(arrow.BinaryTypes.LargeString, 3)
	defer shared.Release()
	require.Same(t, shared.Data(), all.Column(1).Data(), "a column null in every part is the shared all-null array")
	tags := all.Column(2).(*array.String)
	require.Equal(t, 2, tags.NullN(), "a column with a value somewhere is concatenated")
	require.Equal(t, "t", tags.Value(2))
}

func TestNullsUnderConcurrentUseWithChangingLengths(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := 1 + (g+i)%5 // lengths keep replacing each other in the cache
				a := Nulls(arrow.BinaryTypes.String, n)
				if a.Len() != n || a.NullN() != n {
					t.Errorf("got %d/%d nulls, want %d", a.NullN(), a.Len(), n)
				}
				a.Release()
			}
		}()
	}
	wg.Wait()
}
