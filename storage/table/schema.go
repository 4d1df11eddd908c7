// Table schemas: the user's Arrow schema (with a mandatory non-null string key column) plus the
// internal columns every row carries, their JSON form in manifests, additive evolution, and
// aligning an incoming batch to the table schema.
package table

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/strata-store/strata/storage/arrowutil"
)

const (
	// SeqColumn holds each row's write order (a hybrid-logical-clock value); the newest wins.
	SeqColumn = "_seq"
	// TombstoneColumn marks a row that records the deletion of its key.
	TombstoneColumn = "_tombstone"
	// DefaultKeyColumn is the key column when a table does not name one.
	DefaultKeyColumn = "id"
)

// ErrSchema reports a schema that is invalid or an incompatible change; nothing was written.
var ErrSchema = errors.New("schema error")

func schemaErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSchema, fmt.Sprintf(format, args...))
}

// withInternalColumns returns user's fields followed by _seq and _tombstone.
func withInternalColumns(user *arrow.Schema) *arrow.Schema {
	fields := append(append([]arrow.Field{}, user.Fields()...),
		arrow.Field{Name: SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean})
	return arrow.NewSchema(fields, nil)
}

// userFields returns the fields of a table schema without the internal columns.
func userFields(s *arrow.Schema) []arrow.Field {
	var out []arrow.Field
	for _, f := range s.Fields() {
		if f.Name != SeqColumn && f.Name != TombstoneColumn {
			out = append(out, f)
		}
	}
	return out
}

// validateUserSchema checks a user schema: the key column exists, is a non-null string; no
// user column uses the reserved '_' prefix; names are unique; every type is supported.
func validateUserSchema(s *arrow.Schema, key string) error {
	if s == nil || s.NumFields() == 0 {
		return schemaErr("the schema has no columns")
	}
	seen := map[string]bool{}
	for _, f := range s.Fields() {
		if f.Name == "" {
			return schemaErr("a column has an empty name")
		}
		if strings.HasPrefix(f.Name, "_") {
			return schemaErr("column %q: names starting with '_' are reserved", f.Name)
		}
		if seen[f.Name] {
			return schemaErr("column %q appears twice", f.Name)
		}
		seen[f.Name] = true
		if _, err := encodeType(f.Type); err != nil {
			return schemaErr("column %q: %v", f.Name, err)
		}
	}
	kf, ok := s.FieldsByName(key)
	if !ok {
		return schemaErr("the key column %q is missing", key)
	}
	if kf[0].Type.ID() != arrow.STRING || kf[0].Nullable {
		return schemaErr("the key column %q must be a non-null utf8 string (got %s, nullable=%v)", key, kf[0].Type, kf[0].Nullable)
	}
	return nil
}

// evolve returns the table schema after accepting a batch with schema in: every column of in
// must exist in current with the same type, or be new and nullable (appended before the internal
// columns). Any other difference is an ErrSchema. changed reports whether columns were added.
func evolve(current, in *arrow.Schema) (next *arrow.Schema, changed bool, err error) {
	fields := userFields(current)
	for _, f := range in.Fields() {
		if f.Name == SeqColumn || f.Name == TombstoneColumn {
			continue
		}
		cur, ok := current.FieldsByName(f.Name)
		if ok {
			if !arrow.TypeEqual(cur[0].Type, f.Type) {
				return nil, false, schemaErr("column %q has type %s in the table but %s in the batch", f.Name, cur[0].Type, f.Type)
			}
			continue
		}
		if strings.HasPrefix(f.Name, "_") {
			return nil, false, schemaErr("column %q: names starting with '_' are reserved", f.Name)
		}
		if !f.Nullable {
			return nil, false, schemaErr("new column %q must be nullable (older rows have no value)", f.Name)
		}
		if _, err := encodeType(f.Type); err != nil {
			return nil, false, schemaErr("column %q: %v", f.Name, err)
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
		changed = true
	}
	if !changed {
		return current, false, nil
	}
	return withInternalColumns(arrow.NewSchema(fields, nil)), true, nil
}

// Align lays rec out as schema (a table schema, internal columns included): see align. Callers
// outside this package (the MemWAL) use it to validate appends against the table's schema.
func Align(rec arrow.RecordBatch, schema *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	return align(rec, schema, mem)
}

// align returns rec laid out as schema: columns in schema order, missing nullable columns as
// shared all-null arrays (arrowutil.Nulls: no allocation per call), _tombstone defaulting to
// false. A missing non-null column, or nulls in a non-null column, is an ErrSchema. The caller
// releases the result.
func align(rec arrow.RecordBatch, schema *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	cols := make([]arrow.Array, 0, schema.NumFields())
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	for fi := range schema.NumFields() { // Field(i), not Fields(): that copies every field per batch
		f := schema.Field(fi)
		idx := rec.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			switch {
			case f.Name == TombstoneColumn:
				b := array.NewBooleanBuilder(mem)
				b.AppendValues(make([]bool, n), nil)
				cols = append(cols, b.NewArray())
				b.Release()
				continue
			case f.Nullable:
				cols = append(cols, arrowutil.Nulls(f.Type, n)) // shared, immutable
				continue
			default:
				release()
				return nil, schemaErr("the batch has no column %q, which is required", f.Name)
			}
		}
		col := rec.Column(idx[0])
		if arrow.TypeEqual(col.DataType(), f.Type) {
			col.Retain()
		} else if widened, ok := widen(col, f.Type, mem); ok {
			col = widened
		} else {
			release()
			return nil, schemaErr("column %q has type %s, want %s", f.Name, col.DataType(), f.Type)
		}
		cols = append(cols, col)
		if !f.Nullable && col.NullN() > 0 {
			release()
			return nil, schemaErr("column %q is non-null but the batch has %d nulls", f.Name, col.NullN())
		}
	}
	out := array.NewRecordBatch(schema, cols, int64(n))
	release()
	return out, nil
}

// widen converts col to want when that loses nothing: utf8 -> large_utf8 and binary ->
// large_binary (what Parquet and most writers produce for the store's large columns), a narrower
// integer or float to a wider one of the same kind, and timestamps between units when every
// value converts exactly (a safe cast fails otherwise). The caller releases the result.
func widen(col arrow.Array, want arrow.DataType, mem memory.Allocator) (arrow.Array, bool) {
	from := col.DataType().ID()
	ok := false
	switch want.ID() {
	case arrow.LARGE_STRING:
		ok = from == arrow.STRING
	case arrow.LARGE_BINARY:
		ok = from == arrow.BINARY
	case arrow.INT64:
		ok = from == arrow.INT8 || from == arrow.INT16 || from == arrow.INT32
	case arrow.INT32:
		ok = from == arrow.INT8 || from == arrow.INT16
	case arrow.FLOAT64:
		ok = from == arrow.FLOAT32
	case arrow.TIMESTAMP:
		ok = from == arrow.TIMESTAMP
	}
	if !ok {
		return nil, false
	}
	out, err := compute.CastArray(compute.WithAllocator(context.Background(), mem), col, compute.SafeCastOptions(want))
	if err != nil {
		return nil, false
	}
	return out, true
}

// Schema JSON: the manifest's portable description of an Arrow schema.

type fieldJSON struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable bool            `json:"nullable"`
}

var primitiveNames = map[arrow.Type]string{
	arrow.BOOL: "bool", arrow.INT8: "int8", arrow.INT16: "int16", arrow.INT32: "int32", arrow.INT64: "int64",
	arrow.UINT8: "uint8", arrow.UINT16: "uint16", arrow.UINT32: "uint32", arrow.UINT64: "uint64",
	arrow.FLOAT32: "float32", arrow.FLOAT64: "float64", arrow.STRING: "utf8", arrow.LARGE_STRING: "large_utf8",
	arrow.BINARY: "binary", arrow.LARGE_BINARY: "large_binary", arrow.DATE32: "date32",
}

var primitiveTypes = map[string]arrow.DataType{
	"bool": arrow.FixedWidthTypes.Boolean, "int8": arrow.PrimitiveTypes.Int8, "int16": arrow.PrimitiveTypes.Int16,
	"int32": arrow.PrimitiveTypes.Int32, "int64": arrow.PrimitiveTypes.Int64, "uint8": arrow.PrimitiveTypes.Uint8,
	"uint16": arrow.PrimitiveTypes.Uint16, "uint32": arrow.PrimitiveTypes.Uint32, "uint64": arrow.PrimitiveTypes.Uint64,
	"float32": arrow.PrimitiveTypes.Float32, "float64": arrow.PrimitiveTypes.Float64, "utf8": arrow.BinaryTypes.String,
	"large_utf8": arrow.BinaryTypes.LargeString, "binary": arrow.BinaryTypes.Binary,
	"large_binary": arrow.BinaryTypes.LargeBinary, "date32": arrow.FixedWidthTypes.Date32,
}

func encodeField(f arrow.Field) (fieldJSON, error) {
	t, err := encodeType(f.Type)
	if err != nil {
		return fieldJSON{}, fmt.Errorf("column %q: %w", f.Name, err)
	}
	return fieldJSON{Name: f.Name, Type: t, Nullable: f.Nullable}, nil
}

func encodeType(t arrow.DataType) (json.RawMessage, error) {
	if name, ok := primitiveNames[t.ID()]; ok {
		return json.Marshal(name)
	}
	switch tt := t.(type) {
	case *arrow.TimestampType:
		return json.Marshal(map[string]any{"timestamp": map[string]string{"unit": tt.Unit.String(), "tz": tt.TimeZone}})
	case *arrow.ListType:
		elem, err := encodeField(tt.ElemField())
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"list": elem})
	case *arrow.StructType:
		fields := make([]fieldJSON, 0, tt.NumFields())
		for _, f := range tt.Fields() {
			fj, err := encodeField(f)
			if err != nil {
				return nil, err
			}
			fields = append(fields, fj)
		}
		return json.Marshal(map[string]any{"struct": fields})
	}
	return nil, fmt.Errorf("unsupported type %s", t)
}

func decodeField(fj fieldJSON) (arrow.Field, error) {
	t, err := decodeType(fj.Type)
	if err != nil {
		return arrow.Field{}, fmt.Errorf("column %q: %w", fj.Name, err)
	}
	return arrow.Field{Name: fj.Name, Type: t, Nullable: fj.Nullable}, nil
}

func decodeType(raw json.RawMessage) (arrow.DataType, error) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		if t, ok := primitiveTypes[name]; ok {
			return t, nil
		}
		return nil, fmt.Errorf("unknown type %q", name)
	}
	var nested struct {
		Timestamp *struct{ Unit, TZ string } `json:"timestamp"`
		List      *fieldJSON                 `json:"list"`
		Struct    []fieldJSON                `json:"struct"`
	}
	if err := json.Unmarshal(raw, &nested); err != nil {
		return nil, fmt.Errorf("bad type %s", raw)
	}
	switch {
	case nested.Timestamp != nil:
		units := map[string]arrow.TimeUnit{"s": arrow.Second, "ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond}
		u, ok := units[nested.Timestamp.Unit]
		if !ok {
			return nil, fmt.Errorf("bad timestamp unit %q", nested.Timestamp.Unit)
		}
		return &arrow.TimestampType{Unit: u, TimeZone: nested.Timestamp.TZ}, nil
	case nested.List != nil:
		f, err := decodeField(*nested.List)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(f), nil
	case nested.Struct != nil:
		fields := make([]arrow.Field, len(nested.Struct))
		for i, fj := range nested.Struct {
			f, err := decodeField(fj)
			if err != nil {
				return nil, err
			}
			fields[i] = f
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("bad type %s", raw)
}

// encodeSchema is the manifest form of a schema.
func encodeSchema(s *arrow.Schema) ([]fieldJSON, error) {
	out := make([]fieldJSON, 0, s.NumFields())
	for _, f := range s.Fields() {
		fj, err := encodeField(f)
		if err != nil {
			return nil, err
		}
		out = append(out, fj)
	}
	return out, nil
}

// sameFields reports whether a and b describe the same columns, byte for byte.
func sameFields(a, b []fieldJSON) bool {
	return slices.EqualFunc(a, b, func(x, y fieldJSON) bool {
		return x.Name == y.Name && x.Nullable == y.Nullable && bytes.Equal(x.Type, y.Type)
	})
}

func decodeSchema(fields []fieldJSON) (*arrow.Schema, error) {
	out := make([]arrow.Field, len(fields))
	for i, fj := range fields {
		f, err := decodeField(fj)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return arrow.NewSchema(out, nil), nil
}
