// The JSON <-> Arrow row codec shared by rollout and generic stores: JSON objects keyed by column
// name become an Arrow record of the store's schema, and back. Decoding rejects undeclared
// columns, missing required columns and values of the wrong type, naming the row and column, so
// a bad batch fails before anything is written.
package api

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"
)

// codec converts rows of one schema.
type codec struct {
	schema *arrow.Schema   // user columns only
	json   map[string]bool // string columns holding arbitrary JSON documents (stored as text)
	// vectors: the dimension of each vector column (stored as a list of float32), by name: a
	// value must be exactly that many numbers (decoding only; generic stores).
	vectors map[string]int
	// timestampMicros writes timestamps as integers, microseconds since the epoch (generic
	// stores, as lance-context writes them); otherwise they are RFC 3339 strings. Either is
	// accepted on input.
	timestampMicros bool
}

// rowError is a decoding error that names the row and column.
func rowError(row int, col string, format string, args ...any) error {
	return invalid("row %d, column %q: %s", row, col, fmt.Sprintf(format, args...))
}

// rowValues holds one row's raw JSON values by schema column index; nil means absent.
type rowValues [][]byte

// rowFill completes a decoded row in place before it is appended (defaults, required columns).
type rowFill func(i int, row rowValues) error

// columnIndex maps column names to schema positions.
func (c codec) columnIndex() map[string]int {
	idx := make(map[string]int, c.schema.NumFields())
	for i := range c.schema.NumFields() {
		idx[c.schema.Field(i).Name] = i
	}
	return idx
}

// appendRow completes row with fill, checks it and appends it to rb as row rb.rows.
func (c codec) appendRow(rb *rowBuilder, row rowValues, fill rowFill) error {
	i := rb.rows
	if fill != nil {
		if err := fill(i, row); err != nil {
			return err
		}
	}
	for fi, f := range rb.fields {
		raw := row[fi]
		if raw == nil || isNull(raw) {
			if !f.Nullable {
				return rowError(i, f.Name, "required")
			}
			rb.null(fi)
			continue
		}
		if rb.isJSON[fi] {
			if !json.Valid(raw) {
				return rowError(i, f.Name, "not valid JSON")
			}
			var buf bytes.Buffer
			_ = json.Compact(&buf, raw)
			appendString(rb.field(fi), buf.String())
			continue
		}
		if dim := rb.vectorDim[fi]; dim > 0 {
			if err := appendVector(rb.field(fi).(*array.ListBuilder), raw, dim); err != nil {
				return rowError(i, f.Name, "%v", err)
			}
			continue
		}
		if err := appendJSON(rb.field(fi), f.Type, raw); err != nil {
			return rowError(i, f.Name, "%v", err)
		}
	}
	rb.rows++
	return nil
}

// appendVector appends one vector value, an array of exactly dim numbers, to b (a list of
// float32).
func appendVector(b *array.ListBuilder, raw json.RawMessage, dim int) error {
	values := b.ValueBuilder().(*array.Float32Builder)
	b.Append(true)
	n, err := eachArrayValue(raw, func(k int, it []byte) error {
		if k >= dim {
			return errTooManyValues
		}
		v, err := parseFloat(it, 32)
		if err != nil {
			return fmt.Errorf("vector value %d: %v", k, err)
		}
		values.Append(float32(v))
		return nil
	})
	switch {
	case errors.Is(err, errNotAnArray):
		return fmt.Errorf("expects a vector of %d numbers, got %s", dim, truncate(raw))
	case errors.Is(err, errTooManyValues):
		return fmt.Errorf("expects a vector of %d values, got more", dim)
	case err != nil:
		return err
	case n != dim:
		return fmt.Errorf("expects a vector of %d values, got %d", dim, n)
	}
	return nil
}

var (
	errNotAnArray    = errors.New("not a JSON array")
	errTooManyValues = errors.New("too many values")
)

// eachArrayValue calls fn with each value of the JSON array raw (valid JSON) in turn, and returns
// how many there were: no value is copied or kept, so a long array costs no more memory than its
// text. Not an array: errNotAnArray.
func eachArrayValue(raw []byte, fn func(k int, v []byte) error) (int, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return 0, errNotAnArray
	}
	n := 0
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return n, errNotAnArray
		}
		if err := fn(n, v); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// jsonString returns the bytes of a JSON string value. The common case, a string with no escape
// sequences and valid UTF-8, is returned in place without copying (callers copy it into a
// builder); anything else goes through encoding/json. ok is false when raw is not a string.
func jsonString(raw json.RawMessage) (v []byte, ok bool) {
	raw = bytes.Trim(raw, " \t\r\n") // JSON whitespace only (not \v or \f)
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		body := raw[1 : len(raw)-1]
		if bytes.IndexByte(body, '\\') < 0 && bytes.IndexByte(body, '"') < 0 && !hasControl(body) && utf8.Valid(body) {
			return body, true
		}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, false
	}
	return []byte(s), true
}

// hasControl reports whether b holds a byte JSON forbids unescaped inside a string (< 0x20).
// Eight bytes at a time: (x - 0x20 in every byte) & ^x & 0x80 in every byte is non-zero exactly
// when some byte of x is below 0x20.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if (x-0x20*ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func appendString(b array.Builder, s string) {
	switch sb := b.(type) {
	case *array.StringBuilder:
		sb.Append(s)
	case *array.LargeStringBuilder:
		sb.Append(s)
	}
}

func parseInt(raw json.RawMessage, bits int) (int64, error) {
	v, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("want an integer that fits in %d bits, got %s", bits, truncate(raw))
	}
	return v, nil
}

func parseFloat(raw json.RawMessage, bits int) (float64, error) {
	v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), bits)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a number, got %s", truncate(raw))
	}
	return v, nil
}

// jsonBytes decodes a binary value: a base64 string, or an array of byte values (0-255), the two
// spellings lance-context accepts.
func jsonBytes(raw json.RawMessage) ([]byte, error) {
	if len(raw) > 0 && raw[0] == '[' {
		data := make([]byte, 0, len(raw)/4) // at least "0," a byte
		_, err := eachArrayValue(raw, func(k int, it []byte) error {
			v, ok := parseByte(it)
			if !ok {
				return fmt.Errorf("want an array of byte values (0-255), got %s at %d", truncate(it), k)
			}
			data = append(data, v)
			return nil
		})
		if errors.Is(err, errNotAnArray) {
			return nil, fmt.Errorf("want a base64 string or an array of byte values, got %s", truncate(raw))
		}
		return data, err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("want a base64 string or an array of byte values, got %s", truncate(raw))
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not valid base64: %v", err)
	}
	return data, nil
}

// parseByte parses a JSON number that is an integer from 0 to 255.
func parseByte(b []byte) (byte, bool) {
	if len(b) == 0 || len(b) > 3 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return byte(v), v <= 255
}

func truncate(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}

// appendJSON appends one non-null JSON value to b as type dt.
func appendJSON(b array.Builder, dt arrow.DataType, raw json.RawMessage) error {
	switch bb := b.(type) {
	case *array.StringBuilder:
		v, ok := jsonString(raw)
		if !ok {
			return fmt.Errorf("want a string, got %s", truncate(raw))
		}
		bb.BinaryBuilder.Append(v)
	case *array.LargeStringBuilder:
		v, ok := jsonString(raw)
		if !ok {
			return fmt.Errorf("want a string, got %s", truncate(raw))
		}
		bb.BinaryBuilder.Append(v)
	case *array.BooleanBuilder:
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("want true or false, got %s", truncate(raw))
		}
		bb.Append(v)
	case *array.Int8Builder:
		v, err := parseInt(raw, 8)
		if err != nil {
			return err
		}
		bb.Append(int8(v))
	case *array.Int32Builder:
		v, err := parseInt(raw, 32)
		if err != nil {
			return err
		}
		bb.Append(int32(v))
	case *array.Int64Builder:
		v, err := parseInt(raw, 64)
		if err != nil {
			return err
		}
		bb.Append(v)
	case *array.Float32Builder:
		v, err := parseFloat(raw, 32)
		if err != nil {
			return err
		}
		bb.Append(float32(v))
	case *array.Float64Builder:
		v, err := parseFloat(raw, 64)
		if err != nil {
			return err
		}
		bb.Append(v)
	case *array.TimestampBuilder:
		v, ok := jsonString(raw)
		if !ok {
			micros, err := parseInt(raw, 64)
			if err != nil {
				return fmt.Errorf("want an RFC 3339 timestamp or an integer (microseconds since the epoch), got %s", truncate(raw))
			}
			bb.Append(arrow.Timestamp(micros))
			return nil
		}
		s := string(v)
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("want an RFC 3339 timestamp, got %q", s)
		}
		bb.Append(arrow.Timestamp(ts.UnixMicro()))
	case *array.BinaryBuilder:
		data, err := jsonBytes(raw)
		if err != nil {
			return err
		}
		bb.Append(data)
	case *array.ListBuilder:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("want an array, got %s", truncate(raw))
		}
		elem := dt.(*arrow.ListType).ElemField()
		bb.Append(true)
		for _, it := range items {
			if isNull(it) {
				if !elem.Nullable {
					return fmt.Errorf("null inside a list of non-null %s", elem.Type)
				}
				bb.ValueBuilder().AppendNull()
				continue
			}
			if err := appendJSON(bb.ValueBuilder(), elem.Type, it); err != nil {
				return fmt.Errorf("list item: %w", err)
			}
		}
	case *array.StructBuilder:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("want an object, got %s", truncate(raw))
		}
		st := dt.(*arrow.StructType)
		for k := range obj {
			if _, ok := st.FieldIdx(k); !ok {
				return fmt.Errorf("unknown field %q", k)
			}
		}
		bb.Append(true)
		for i, f := range st.Fields() {
			v, ok := obj[f.Name]
			if !ok || isNull(v) {
				if !f.Nullable {
					return fmt.Errorf("field %q is required", f.Name)
				}
				bb.FieldBuilder(i).AppendNull()
				continue
			}
			if err := appendJSON(bb.FieldBuilder(i), f.Type, v); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
	default:
		return fmt.Errorf("unsupported column type %s", dt)
	}
	return nil
}

// encode turns every row of rec into a JSON object (columns in schema order; nulls omitted unless
// always lists them).
func (c codec) encode(rec arrow.RecordBatch, always map[string]bool) []json.RawMessage {
	e := c.newRowEncoder(rec, always)
	out := make([]json.RawMessage, rec.NumRows())
	for i := range out {
		out[i] = e.appendRow(nil, i)
	}
	return out
}

// writeRows writes every row of rec as encode does, comma-separated, straight to w.
func (c codec) writeRows(w *bufio.Writer, rec arrow.RecordBatch, always map[string]bool) {
	e := c.newRowEncoder(rec, always)
	buf := make([]byte, 0, 64<<10)
	for i := 0; i < int(rec.NumRows()); i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = e.appendRow(buf, i)
		if len(buf) >= 32<<10 {
			w.Write(buf)
			buf = buf[:0]
		}
	}
	w.Write(buf)
}

// writePage streams a page, {"<member>": [rows...], "next_cursor": next} (the cursor omitted on
// the last page), row by row instead of building the whole document first.
func (c codec) writePage(ec echo.Context, member string, rec arrow.RecordBatch, always map[string]bool, next string) error {
	res := ec.Response()
	res.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	res.WriteHeader(http.StatusOK)
	w := bufio.NewWriterSize(res, 64<<10)
	w.WriteString(`{"` + member + `":[`)
	c.writeRows(w, rec, always)
	w.WriteByte(']')
	if next != "" {
		cursor, _ := json.Marshal(next)
		w.WriteString(`,"next_cursor":`)
		w.Write(cursor)
	}
	w.WriteString("}\n")
	return w.Flush()
}

// valueAt is the JSON-ready value of arr[i].
func valueAt(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC().Format(time.RFC3339Nano)
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.List:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, valueAt(vals, int(j)))
		}
		return out
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		out := make(map[string]any, st.NumFields())
		for f := 0; f < st.NumFields(); f++ {
			if v := valueAt(a.Field(f), i); v != nil {
				out[st.Field(f).Name] = v
			}
		}
		return out
	}
	return nil
}
