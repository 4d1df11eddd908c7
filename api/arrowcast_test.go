package api

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// Every numeric conversion keeps each value exactly or refuses the column, naming the row.
func TestNumericConversionsKeepEveryValueOrNameTheRowThatDoesNotFit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ints := func(vals ...int64) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		b.AppendNull()
		return b.NewArray()
	}
	uints := func(vals ...uint64) arrow.Array {
		b := array.NewUint64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}
	floats := func(vals ...float64) arrow.Array {
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}
	for _, c := range []struct {
		name   string
		col    arrow.Array
		want   arrow.DataType
		badRow int // -1: converts
	}{
		{"int64 into int32", ints(math.MinInt32, 0, math.MaxInt32), arrow.PrimitiveTypes.Int32, -1},
		{"int64 past int32", ints(1, math.MaxInt32+1), arrow.PrimitiveTypes.Int32, 1},
		{"negative into uint8", ints(3, -1), arrow.PrimitiveTypes.Uint8, 1},
		{"uint64 into int64", uints(0, math.MaxInt64), arrow.PrimitiveTypes.Int64, -1},
		{"uint64 past int64", uints(math.MaxInt64 + 1), arrow.PrimitiveTypes.Int64, 0},
		{"double into float32", floats(0.5, -1e30, math.Inf(1), math.NaN()), arrow.PrimitiveTypes.Float32, -1},
		{"double past float32", floats(1, 1e39), arrow.PrimitiveTypes.Float32, 1},
		{"int64 a float32 holds exactly", ints(1<<24, -3), arrow.PrimitiveTypes.Float32, -1},
		{"int64 a float32 rounds", ints(1<<24 + 1), arrow.PrimitiveTypes.Float32, 0},
		{"int64 a float64 rounds", ints(1<<53 + 1), arrow.PrimitiveTypes.Float64, 0},
		{"uint64 a float64 rounds", uints(math.MaxUint64), arrow.PrimitiveTypes.Float64, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer c.col.Release()
			got, err := convertNumeric(c.col, c.want, "x", mem)
			if c.badRow >= 0 {
				require.ErrorContains(t, err, `column "x" row `+string(rune('0'+c.badRow))+":")
				return
			}
			require.NoError(t, err)
			defer got.Release()
			require.True(t, arrow.TypeEqual(c.want, got.DataType()))
			require.Equal(t, c.col.Len(), got.Len())
			for i := 0; i < got.Len(); i++ {
				require.Equal(t, c.col.IsNull(i), got.IsNull(i))
				if c.col.IsNull(i) {
					continue
				}
				n, u, f, kind := numericAt(c.col, i)
				gn, gu, gf, gkind := numericAt(got, i)
				switch {
				case kind == 'f' && math.IsNaN(f):
					require.True(t, math.IsNaN(gf))
				case kind == 'f' && math.IsInf(f, 0):
					require.Equal(t, f, gf)
				case kind == 'f':
					require.InEpsilon(t, f, gf, 1e-6)
				case gkind == 'f':
					require.Equal(t, float64(n)+float64(u), gf, "exact")
				default:
					require.Equal(t, n+int64(u), gn+int64(gu))
				}
			}
		})
	}
	col := floats(1.5)
	defer col.Release()
	got, err := convertNumeric(col, arrow.PrimitiveTypes.Int32, "x", mem)
	require.NoError(t, err)
	require.Nil(t, got, "floats never become integers here: the schema check names the column")
}
