// Encoding Arrow rows as JSON objects, column by column: each column gets an appender chosen once
// per record (its quoted name and a typed value writer), so a row costs appends into one reused
// byte buffer — no per-row maps, no per-value reflection, and JSON columns (validated when they
// were written) are copied through without being parsed again.
package api

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/go-json-experiment/json/jsontext"
)

// columnEncoder writes one column of a record. Its quoted name and value writer are made when
// the column first writes something (prepare): most columns of a rollout row are null, and a
// point get writes one row.
type columnEncoder struct {
	arr    arrow.Array
	always bool   // write null values as null instead of omitting them
	name   []byte // the quoted name and a colon (nil until prepared)
	value  func(dst []byte, i int) []byte
}

// prepare makes col's quoted name and value writer (field is its name).
func (c codec) prepare(col *columnEncoder, field string) {
	name, _ := jsontext.AppendQuote(nil, field)
	col.name = append(name, ':')
	col.value = valueEncoder(col.arr, c.json[field])
	if ts, ok := col.arr.(*array.Timestamp); ok && c.timestampMicros {
		col.value = microsEncoder(ts)
	}
}

// rowEncoder writes the rows of one record as JSON objects (columns in schema order; nulls omitted
// unless listed in always).
type rowEncoder struct {
	codec  codec
	schema *arrow.Schema
	cols   []columnEncoder
}

func (c codec) newRowEncoder(rec arrow.RecordBatch, always map[string]bool) *rowEncoder {
	schema := rec.Schema()
	e := &rowEncoder{codec: c, schema: schema, cols: make([]columnEncoder, rec.NumCols())}
	for ci := range schema.NumFields() { // Field(i), not Fields(): no copy of the schema per response
		e.cols[ci] = columnEncoder{arr: rec.Column(ci), always: always[schema.Field(ci).Name]}
	}
	return e
}

// appendJSONDocument appends a JSON column's value: the document itself when it is one valid
// JSON value (every append path checks that), else — a value that reached storage some other way
// — the text as a JSON string, so no stored value can inject members or records into an answer
// or make it unparseable.
func appendJSONDocument(dst []byte, v string) []byte {
	if json.Valid(unsafe.Slice(unsafe.StringData(v), len(v))) {
		return append(dst, v...)
	}
	return appendQuoted(dst, v)
}

// appendRow appends row i as a JSON object to dst.
func (e *rowEncoder) appendRow(dst []byte, i int) []byte {
	dst = append(dst, '{')
	first := true
	for k := range e.cols {
		col := &e.cols[k]
		null := col.arr.IsNull(i)
		if null && !col.always {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if col.name == nil {
			e.codec.prepare(col, e.schema.Field(k).Name)
		}
		dst = append(dst, col.name...)
		if null {
			dst = append(dst, "null"...)
			continue
		}
		dst = col.value(dst, i)
	}
	return append(dst, '}')
}

// valueEncoder returns the writer of arr's non-null values; rawJSON marks a string column holding
// JSON documents, written as they are.
func valueEncoder(arr arrow.Array, rawJSON bool) func(dst []byte, i int) []byte {
	switch a := arr.(type) {
	case *array.String:
		if rawJSON {
			return func(dst []byte, i int) []byte { return appendJSONDocument(dst, a.Value(i)) }
		}
		return func(dst []byte, i int) []byte { return appendQuoted(dst, a.Value(i)) }
	case *array.LargeString:
		if rawJSON {
			return func(dst []byte, i int) []byte { return appendJSONDocument(dst, a.Value(i)) }
		}
		return func(dst []byte, i int) []byte { return appendQuoted(dst, a.Value(i)) }
	case *array.Boolean:
		return func(dst []byte, i int) []byte { return strconv.AppendBool(dst, a.Value(i)) }
	case *array.Int8:
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int16:
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int32:
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int64:
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, a.Value(i), 10) }
	case *array.Uint8:
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint16:
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint32:
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint64:
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, a.Value(i), 10) }
	case *array.Float32:
		return func(dst []byte, i int) []byte { return appendFloat(dst, float64(a.Value(i)), 32) }
	case *array.Float64:
		return func(dst []byte, i int) []byte { return appendFloat(dst, a.Value(i), 64) }
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return func(dst []byte, i int) []byte {
			dst = append(dst, '"')
			dst = a.Value(i).ToTime(unit).UTC().AppendFormat(dst, time.RFC3339Nano)
			return append(dst, '"')
		}
	case *array.Binary:
		return func(dst []byte, i int) []byte { return appendBase64(dst, a.Value(i)) }
	case *array.LargeBinary:
		return func(dst []byte, i int) []byte { return appendBase64(dst, a.Value(i)) }
	}
	// Nested values (lists, structs) are rare in listings: the general path.
	return func(dst []byte, i int) []byte {
		v, err := json.Marshal(valueAt(arr, i))
		if err != nil {
			return append(dst, "null"...)
		}
		return append(dst, v...)
	}
}

// microsEncoder writes a timestamp as an integer: microseconds since the epoch.
func microsEncoder(a *array.Timestamp) func(dst []byte, i int) []byte {
	unit := a.DataType().(*arrow.TimestampType).Unit
	return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, a.Value(i).ToTime(unit).UnixMicro(), 10) }
}

// appendQuoted appends s as a JSON string (invalid UTF-8 replaced with U+FFFD, as encoding/json
// does; the error only reports that).
func appendQuoted(dst []byte, s string) []byte {
	out, _ := jsontext.AppendQuote(dst, s)
	return out
}

// appendFloat appends f as encoding/json formats a float of that many bits; NaN and infinities,
// which JSON cannot hold, are written as null.
func appendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' { // e-09 -> e-9, as encoding/json writes it
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

func appendBase64(dst []byte, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}
