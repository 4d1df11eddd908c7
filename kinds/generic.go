// The generic kind: rows under a schema each store declares at creation (SchemaSpec), with a
// string "id" key.
package kinds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/catalog"
)

// ParseSchemaSpec turns a generic store's SchemaSpec into an Arrow schema with "id" (non-null
// string) first. The spec is {"columns": [[name, type], ...]} where type is a name ("string",
// "int64", ...) or an object {"type": name, "nullable": bool, "large": bool, "blob": bool,
// "item": type, "dim": n, "metric": m}. "id", the store's key, is a string stored non-null; a
// new store's spec must declare it (CheckNewSchemaSpec), one stored by an earlier release may
// leave it out. Errors wrap catalog.ErrInvalid.
func ParseSchemaSpec(raw json.RawMessage) (*arrow.Schema, error) {
	spec, err := ParseGenericSpec(raw)
	return spec.Schema, err
}

// GenericSpec is a parsed SchemaSpec: the store's Arrow schema and what the schema alone cannot
// say, each vector column's dimension.
type GenericSpec struct {
	Schema *arrow.Schema
	// VectorDims: the number of values of each vector column, by name. A vector column is stored
	// as a list of float32 (VectorType) whose every non-null value holds exactly that many.
	VectorDims map[string]int
	// Blobs: the binary columns declared {"blob": true}, left out of listings and of point reads
	// that name no columns.
	Blobs map[string]bool
}

// ParseGenericSpec is ParseSchemaSpec with the vector dimensions and the blob columns.
func ParseGenericSpec(raw json.RawMessage) (GenericSpec, error) {
	var spec struct {
		Columns []json.RawMessage `json:"columns"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return GenericSpec{}, specErr("schema must be {\"columns\": [[name, type], ...]}: %v", err)
	}
	if len(spec.Columns) == 0 {
		return GenericSpec{}, specErr("schema has no columns")
	}
	if len(spec.Columns) > MaxGenericColumns {
		return GenericSpec{}, specErr("schema has %d columns; the limit is %d", len(spec.Columns), MaxGenericColumns)
	}
	fields := []arrow.Field{{Name: "id", Type: utf8}}
	dims, blobs := map[string]int{}, map[string]bool{}
	seen := map[string]bool{}
	for i, c := range spec.Columns {
		var pair []json.RawMessage
		if err := json.Unmarshal(c, &pair); err != nil || len(pair) != 2 {
			return GenericSpec{}, specErr("column %d must be a [name, type] pair", i)
		}
		var name string
		if err := json.Unmarshal(pair[0], &name); err != nil || name == "" {
			return GenericSpec{}, specErr("column %d has no name", i)
		}
		if strings.HasPrefix(name, "_") {
			return GenericSpec{}, specErr("column %q: names starting with '_' are reserved", name)
		}
		if seen[name] {
			return GenericSpec{}, specErr("column %q appears twice", name)
		}
		seen[name] = true
		t, nullable, dim, err := parseColumnType(pair[1], true)
		if err != nil {
			return GenericSpec{}, specErr("column %q: %v", name, err)
		}
		if name == "id" {
			if !arrow.TypeEqual(t, utf8) {
				return GenericSpec{}, specErr(`column "id" must be a string`)
			}
			continue
		}
		if dim > 0 {
			dims[name] = dim
		}
		if isBlob(pair[1]) {
			blobs[name] = true
		}
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: nullable})
	}
	return GenericSpec{Schema: arrow.NewSchema(fields, nil), VectorDims: dims, Blobs: blobs}, nil
}

// CheckNewSchemaSpec checks a spec for a new store: ParseSchemaSpec's rules, and "id" declared
// (lance-context's rule: the key is part of the declaration).
func CheckNewSchemaSpec(raw json.RawMessage) error {
	if _, err := ParseGenericSpec(raw); err != nil {
		return err
	}
	var cols struct {
		Columns [][]json.RawMessage `json:"columns"`
	}
	_ = json.Unmarshal(raw, &cols) // parsed above
	for _, c := range cols.Columns {
		var name string
		if len(c) == 2 && json.Unmarshal(c[0], &name) == nil && name == "id" {
			return nil
		}
	}
	return specErr(`schema must declare an "id" column (a string: the store's key, e.g. ["id", {"type": "string", "nullable": false}])`)
}

// isBlob reports whether a column type is {"type": "binary", "blob": true}.
func isBlob(raw json.RawMessage) bool {
	var obj struct {
		Type string `json:"type"`
		Blob bool   `json:"blob"`
	}
	return json.Unmarshal(raw, &obj) == nil && obj.Type == "binary" && obj.Blob
}

func specErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", catalog.ErrInvalid, fmt.Sprintf(format, args...))
}

// parseColumnType parses one column's type: its Arrow type, whether it is nullable and, for a
// vector, its dimension (0 otherwise).
func parseColumnType(raw json.RawMessage, allowList bool) (arrow.DataType, bool, int, error) {
	var name string
	obj := struct {
		Type     string          `json:"type"`
		Nullable *bool           `json:"nullable"`
		Large    bool            `json:"large"`
		Blob     bool            `json:"blob"`
		Item     json.RawMessage `json:"item"`
		Dim      *int64          `json:"dim"`
		Metric   *string         `json:"metric"`
	}{}
	if json.Unmarshal(raw, &name) == nil {
		obj.Type = name
	} else if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, false, 0, fmt.Errorf("type must be a name or an object with \"type\"")
	}
	nullable := obj.Nullable == nil || *obj.Nullable
	switch obj.Type {
	case "string":
		if obj.Large {
			return large, nullable, 0, nil
		}
		return utf8, nullable, 0, nil
	case "int32":
		return i32, nullable, 0, nil
	case "int64":
		return i64, nullable, 0, nil
	case "float32":
		return f32, nullable, 0, nil
	case "float64":
		return arrow.PrimitiveTypes.Float64, nullable, 0, nil
	case "bool":
		return arrow.FixedWidthTypes.Boolean, nullable, 0, nil
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nullable, 0, nil
	case "binary":
		return arrow.BinaryTypes.LargeBinary, nullable, 0, nil
	case "list":
		if !allowList {
			return nil, false, 0, fmt.Errorf("lists of lists are not supported")
		}
		if len(obj.Item) == 0 {
			return nil, false, 0, fmt.Errorf("a list needs an \"item\" type")
		}
		item, _, _, err := parseColumnType(obj.Item, false)
		if err != nil {
			return nil, false, 0, fmt.Errorf("list item: %w", err)
		}
		return arrow.ListOf(item), nullable, 0, nil
	case "vector":
		if !allowList {
			return nil, false, 0, fmt.Errorf("a list of vectors is not supported; declare a vector column")
		}
		dim, err := vectorDim(obj.Dim, obj.Metric)
		if err != nil {
			return nil, false, 0, err
		}
		return VectorType, nullable, dim, nil
	}
	return nil, false, 0, fmt.Errorf("unknown type %q (want string, int32, int64, float32, float64, bool, timestamp, binary, vector or list)", obj.Type)
}

// MaxVectorDim bounds a vector column's dimension (256 KiB of float32 a value at the limit).
const MaxVectorDim = 1 << 16

// vectorMetrics are the distance metrics a vector column may declare (lance-context's names; the
// metric is kept in the store's schema spec, for the indexes that will use it).
var vectorMetrics = map[string]bool{"l2": true, "euclidean": true, "cosine": true, "dot": true, "dot_product": true}

// VectorType is how a vector column is stored: a list of float32 (Parquet writers cannot store
// null fixed-size lists, and a null list costs no values), each non-null value exactly the
// column's dimension long, which the API checks on the way in.
var VectorType = arrow.ListOfField(arrow.Field{Name: "item", Type: f32, Nullable: true})

// vectorDim checks a vector column's {"dim": n, "metric": m} and returns n.
func vectorDim(dim *int64, metric *string) (int, error) {
	switch {
	case dim == nil:
		return 0, fmt.Errorf(`a vector needs its dimension, "dim"`)
	case *dim <= 0:
		return 0, fmt.Errorf("vector dimension must be positive, got %d", *dim)
	case *dim > MaxVectorDim:
		return 0, fmt.Errorf("vector dimension %d is over the limit of %d", *dim, MaxVectorDim)
	}
	if metric != nil && !vectorMetrics[strings.ToLower(*metric)] {
		return 0, fmt.Errorf("unknown distance metric %q (want l2, cosine or dot)", *metric)
	}
	return int(*dim), nil
}
