package fragment

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// Point-read arrays laid out in one allocation are the arrays a builder makes of the same values,
// for every type the point path reads, any mix of nulls and any number of rows; they validate in
// full, and a nested column of nulls is a valid array of nulls from the given allocator.
func TestPointReadArraysEqualWhatBuildersMakeOfTheSameValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := []arrow.DataType{
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary,
		arrow.FixedWidthTypes.Boolean,
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32,
		arrow.FixedWidthTypes.Date32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.String, Nullable: true})),
	}
	for _, dt := range types {
		require.Equal(t, pointReadableType(dt), dt.ID() != arrow.LIST, "%s: the test covers every point-readable type", dt)
	}
	require.Len(t, pointReadPhysical, len(types)-1, "every point-readable type is in the test")
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 300 {
		rows := 1 + rng.IntN(9)
		values := getPointValues()
		want := make([]arrow.Array, len(types))
		for c, dt := range types {
			b := array.NewBuilder(mem, dt)
			for range rows {
				if !pointReadableType(dt) || rng.IntN(3) == 0 {
					values.appendNull()
					b.AppendNull()
					continue
				}
				v := randomPlainValue(rng, dt)
				require.NoError(t, values.appendValue(dt, v))
				appendPlainWithBuilder(t, b, v)
			}
			want[c] = b.NewArray()
			b.Release()
		}
		got, err := values.arrays(mem, types, rows)
		require.NoError(t, err)
		values.release()
		for c := range types {
			require.NoError(t, array.ValidateFull(got[c]), "trial %d column %s", trial, types[c])
			require.True(t, array.Equal(want[c], got[c]), "trial %d column %s: want %v got %v", trial, types[c], want[c], got[c])
			require.Equal(t, want[c].NullN(), got[c].NullN())
		}
		releaseArrays(want)
		releaseArrays(got)
	}

	// Bad values are refused, not laid out: a fixed-width value shorter than its type, a value
	// in a nested column, and a value count that does not match the columns.
	values := getPointValues()
	defer values.release()
	require.ErrorIs(t, values.appendValue(arrow.PrimitiveTypes.Int64, []byte{1, 2, 3}), errPage)
	require.ErrorIs(t, values.appendValue(arrow.FixedWidthTypes.Boolean, nil), errPage)
	require.NoError(t, values.appendValue(arrow.BinaryTypes.String, []byte("x")))
	_, err := values.arrays(mem, []arrow.DataType{types[len(types)-1]}, 1)
	require.ErrorIs(t, err, errPage)
	_, err = values.arrays(mem, []arrow.DataType{arrow.BinaryTypes.String}, 2)
	require.ErrorIs(t, err, errPage)
}

// randomPlainValue is a value of dt as a Parquet plain page stores it (INT32 for narrow integers).
func randomPlainValue(rng *rand.Rand, dt arrow.DataType) []byte {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		v := make([]byte, rng.IntN(20))
		for i := range v {
			v[i] = byte('a' + rng.IntN(26))
		}
		return v
	case arrow.BOOL:
		return []byte{byte(rng.IntN(2))}
	case arrow.INT64, arrow.UINT64, arrow.TIMESTAMP:
		return binary.LittleEndian.AppendUint64(nil, rng.Uint64())
	case arrow.FLOAT64: // not any bits: a NaN equals nothing
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(rng.NormFloat64()))
	case arrow.FLOAT32:
		return binary.LittleEndian.AppendUint32(nil, math.Float32bits(rng.Float32()))
	case arrow.INT8:
		return binary.LittleEndian.AppendUint32(nil, uint32(int32(int8(rng.Uint32()))))
	case arrow.INT16:
		return binary.LittleEndian.AppendUint32(nil, uint32(int32(int16(rng.Uint32()))))
	case arrow.UINT8:
		return binary.LittleEndian.AppendUint32(nil, uint32(uint8(rng.Uint32())))
	case arrow.UINT16:
		return binary.LittleEndian.AppendUint32(nil, uint32(uint16(rng.Uint32())))
	default: // INT32, UINT32, DATE32
		return binary.LittleEndian.AppendUint32(nil, rng.Uint32())
	}
}

// appendPlainWithBuilder appends a plain-encoded value the way a builder takes it.
func appendPlainWithBuilder(t *testing.T, b array.Builder, v []byte) {
	le32 := func() uint32 { return binary.LittleEndian.Uint32(v) }
	le64 := func() uint64 { return binary.LittleEndian.Uint64(v) }
	switch bb := b.(type) {
	case *array.StringBuilder:
		bb.Append(string(v))
	case *array.LargeStringBuilder:
		bb.Append(string(v))
	case *array.BinaryBuilder:
		bb.Append(v)
	case *array.BooleanBuilder:
		bb.Append(v[0] == 1)
	case *array.Int8Builder:
		bb.Append(int8(le32()))
	case *array.Int16Builder:
		bb.Append(int16(le32()))
	case *array.Int32Builder:
		bb.Append(int32(le32()))
	case *array.Uint8Builder:
		bb.Append(uint8(le32()))
	case *array.Uint16Builder:
		bb.Append(uint16(le32()))
	case *array.Uint32Builder:
		bb.Append(le32())
	case *array.Date32Builder:
		bb.Append(arrow.Date32(int32(le32())))
	case *array.Int64Builder:
		bb.Append(int64(le64()))
	case *array.Uint64Builder:
		bb.Append(le64())
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(int64(le64())))
	case *array.Float32Builder:
		bb.Append(math.Float32frombits(le32()))
	case *array.Float64Builder:
		bb.Append(math.Float64frombits(le64()))
	default:
		t.Fatalf("no builder append for %T", b)
	}
}

// A column of nulls (nested or flat) is shared between reads, and a reader releasing its array
// (however many reads have) leaves every other reader's intact.
func TestSharedNullColumnsOutliveEveryReadersRelease(t *testing.T) {
	for _, dt := range []arrow.DataType{
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.String, Nullable: true})),
		arrow.BinaryTypes.LargeString, arrow.PrimitiveTypes.Float32, &arrow.TimestampType{Unit: arrow.Microsecond},
	} {
		t.Run(dt.String(), func(t *testing.T) { sharedNullColumnsOutliveReleases(t, dt) })
	}
}

func sharedNullColumnsOutliveReleases(t *testing.T, dt arrow.DataType) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	first := nullColumn(mem, dt, 1)
	for range 100 {
		nullColumn(mem, dt, 1).Release()
	}
	second := nullColumn(mem, dt, 1)
	require.Same(t, first.Data(), second.Data(), "one array per type and row count")
	first.Release()
	second.Release()
	third := nullColumn(mem, dt, 1)
	defer third.Release()
	require.NoError(t, array.ValidateFull(third))
	require.Equal(t, 1, third.Len())
	require.Equal(t, 1, third.NullN())

	many := nullColumn(mem, dt, maxCachedNullRows+1) // past the bound: the reader's own, from mem
	require.NoError(t, array.ValidateFull(many))
	require.Equal(t, maxCachedNullRows+1, many.NullN())
	require.NotZero(t, mem.CurrentAlloc())
	many.Release()
}
