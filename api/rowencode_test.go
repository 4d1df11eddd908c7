package api

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// The row encoder writes valid JSON objects whose values are those encoding/json gives the same
// Go values (strings with quotes, control characters and invalid UTF-8, every integer width,
// floats, timestamps, binaries, raw JSON columns), omits nulls unless asked, and writes floats
// JSON cannot hold (NaN, infinities) as null.
func TestRowEncoderWritesWhatEncodingJSONReads(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8}, {Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32}, {Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32}, {Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "bin", Type: arrow.BinaryTypes.Binary}, {Name: "doc", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	strs := []string{"plain", "quote\" and \\", "ctl\x01\n", "bad\xffutf8", "<&>"}
	f64s := []float64{1.5, 1e-9, 1e22, math.NaN(), math.Inf(-1)}
	for i := range 5 {
		if i == 2 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(strs[i])
		}
		b.Field(1).(*array.Int8Builder).Append(int8(-i))
		b.Field(2).(*array.Int16Builder).Append(int16(-300 * i))
		b.Field(3).(*array.Uint32Builder).Append(math.MaxUint32 - uint32(i))
		b.Field(4).(*array.Uint64Builder).Append(math.MaxUint64 - uint64(i))
		b.Field(5).(*array.Float32Builder).Append(float32(i) / 3)
		b.Field(6).(*array.Float64Builder).Append(f64s[i])
		b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_123_456 + int64(i)))
		b.Field(8).(*array.BinaryBuilder).Append([]byte{0, byte(i), 255})
		if i == 2 {
			b.Field(9).AppendNull()
			continue
		}
		b.Field(9).(*array.StringBuilder).Append(`{"k":[1,2,{"x":null}]}`)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	c := codec{schema: schema, json: map[string]bool{"doc": true}}
	rows := c.encode(rec, map[string]bool{"f64": true})
	require.Len(t, rows, 5)
	for i, row := range rows {
		var got map[string]any
		require.NoError(t, json.Unmarshal(row, &got), "row %d: %s", i, row)
		want := map[string]any{}
		for ci, f := range schema.Fields() {
			col := rec.Column(ci)
			switch {
			case col.IsNull(i):
				continue
			case f.Name == "doc":
				var doc any
				require.NoError(t, json.Unmarshal([]byte(col.(*array.String).Value(i)), &doc))
				want[f.Name] = doc
			default:
				v := valueAt(col, i)
				if fv, ok := v.(float64); ok && (math.IsNaN(fv) || math.IsInf(fv, 0)) {
					v = nil
				}
				data, err := json.Marshal(v)
				require.NoError(t, err)
				var back any
				require.NoError(t, json.Unmarshal(data, &back))
				want[f.Name] = back
			}
		}
		if i >= 3 {
			want["f64"] = nil // NaN and -Inf: null, written since "f64" is listed in always
		}
		require.Equal(t, want, got, "row %d: %s", i, row)
	}
}
