// Numeric conversion of Arrow append columns: files written by DuckDB or pandas carry BIGINT and
// DOUBLE where a store's schema has int32 or float32 columns (a rollout's sequence_order and
// reward). A column of another integer or float type is converted to the schema's type when
// every value fits exactly (an integer within the target's range, a double within float32's
// range, an integer a float represents exactly); the first value that does not is a 400 naming
// its column and row. Anything else is left as it is, for the store's schema check to name.
package api

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// conformNumericColumns returns rec with its numeric columns converted to the types schema
// declares for them (see the file comment), or rec itself (retained) when none needs it. The
// caller releases the result. rec's columns must already be validated.
func conformNumericColumns(rec arrow.RecordBatch, schema *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	var cols []arrow.Array
	var fields []arrow.Field
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	for i, f := range rec.Schema().Fields() {
		col := rec.Column(i)
		idx := schema.FieldIndices(f.Name)
		if len(idx) == 1 {
			want := schema.Field(idx[0]).Type
			if !arrow.TypeEqual(col.DataType(), want) && isNumeric(col.DataType()) && isNumeric(want) {
				conv, err := convertNumeric(col, want, f.Name, mem)
				if err != nil {
					return nil, err
				}
				if conv != nil {
					made = append(made, conv)
					if cols == nil {
						cols = append([]arrow.Array{}, rec.Columns()...)
						fields = append([]arrow.Field{}, rec.Schema().Fields()...)
					}
					cols[i], fields[i].Type = conv, want
				}
			}
		}
	}
	if cols == nil {
		rec.Retain()
		return rec, nil
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}

func isNumeric(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

// numericAt reads value i of a numeric array: a signed integer n (kind 'i'), an unsigned one u
// ('u') or a float f ('f').
func numericAt(a arrow.Array, i int) (n int64, u uint64, f float64, kind byte) {
	switch v := a.(type) {
	case *array.Int8:
		return int64(v.Value(i)), 0, 0, 'i'
	case *array.Int16:
		return int64(v.Value(i)), 0, 0, 'i'
	case *array.Int32:
		return int64(v.Value(i)), 0, 0, 'i'
	case *array.Int64:
		return v.Value(i), 0, 0, 'i'
	case *array.Uint8:
		return 0, uint64(v.Value(i)), 0, 'u'
	case *array.Uint16:
		return 0, uint64(v.Value(i)), 0, 'u'
	case *array.Uint32:
		return 0, uint64(v.Value(i)), 0, 'u'
	case *array.Uint64:
		return 0, v.Value(i), 0, 'u'
	case *array.Float32:
		return 0, 0, float64(v.Value(i)), 'f'
	case *array.Float64:
		return 0, 0, v.Value(i), 'f'
	}
	return 0, 0, 0, 0
}

// intRange is the range of an integer type (signed bounds as int64, the unsigned maximum as
// uint64).
func intRange(id arrow.Type) (lo int64, hi uint64, ok bool) {
	switch id {
	case arrow.INT8:
		return math.MinInt8, math.MaxInt8, true
	case arrow.INT16:
		return math.MinInt16, math.MaxInt16, true
	case arrow.INT32:
		return math.MinInt32, math.MaxInt32, true
	case arrow.INT64:
		return math.MinInt64, math.MaxInt64, true
	case arrow.UINT8:
		return 0, math.MaxUint8, true
	case arrow.UINT16:
		return 0, math.MaxUint16, true
	case arrow.UINT32:
		return 0, math.MaxUint32, true
	case arrow.UINT64:
		return 0, math.MaxUint64, true
	}
	return 0, 0, false
}

// convertNumeric converts col to want when every value fits exactly; nil (no error) when the
// pair is not a conversion this accepts (floats into integers: the schema check names it).
func convertNumeric(col arrow.Array, want arrow.DataType, name string, mem memory.Allocator) (arrow.Array, error) {
	lo, hi, toInt := intRange(want.ID())
	if id := col.DataType().ID(); toInt && (id == arrow.FLOAT32 || id == arrow.FLOAT64) {
		return nil, nil
	}
	b := array.NewBuilder(mem, want)
	defer b.Release()
	b.Reserve(col.Len())
	for i := 0; i < col.Len(); i++ {
		if col.IsNull(i) {
			b.AppendNull()
			continue
		}
		n, u, f, kind := numericAt(col, i)
		misfit := func() error {
			v := any(n)
			switch kind {
			case 'u':
				v = u
			case 'f':
				v = f
			}
			return invalid("column %q row %d: %v does not fit the store's %s", name, i, v, want)
		}
		switch {
		case toInt && kind == 'i':
			if n < lo || (n > 0 && uint64(n) > hi) {
				return nil, misfit()
			}
			appendInt(b, n, uint64(n))
		case toInt && kind == 'u':
			if u > hi {
				return nil, misfit()
			}
			appendInt(b, int64(u), u)
		default: // into a float
			x := f
			switch kind {
			case 'i':
				x = float64(n)
				if int64(x) != n || x >= 1<<63 {
					return nil, misfit()
				}
			case 'u':
				x = float64(u)
				if x >= 1<<64 || uint64(x) != u {
					return nil, misfit()
				}
			}
			if want.ID() == arrow.FLOAT32 {
				if !math.IsNaN(x) && !math.IsInf(x, 0) && math.Abs(x) > math.MaxFloat32 {
					return nil, misfit()
				}
				if kind != 'f' && float64(float32(x)) != x {
					return nil, misfit()
				}
				b.(*array.Float32Builder).Append(float32(x))
			} else {
				b.(*array.Float64Builder).Append(x)
			}
		}
	}
	return b.NewArray(), nil
}

// appendInt appends an integer known to fit b's type.
func appendInt(b array.Builder, n int64, u uint64) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(n))
	case *array.Int16Builder:
		b.Append(int16(n))
	case *array.Int32Builder:
		b.Append(int32(n))
	case *array.Int64Builder:
		b.Append(n)
	case *array.Uint8Builder:
		b.Append(uint8(u))
	case *array.Uint16Builder:
		b.Append(uint16(u))
	case *array.Uint32Builder:
		b.Append(uint32(u))
	case *array.Uint64Builder:
		b.Append(u)
	}
}
