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
// "int64", ...) or an object {"type": name, "nullable": bool, "large": bool, "item": type}.
// Errors wrap catalog.ErrInvalid.
func ParseSchemaSpec(raw json.RawMessage) (*arrow.Schema, error) {
	var spec struct {
		Columns []json.RawMessage `json:"columns"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, specErr("schema must be {\"columns\": [[name, type], ...]}: %v", err)
	}
	if len(spec.Columns) == 0 {
		return nil, specErr("schema has no columns")
	}
	if len(spec.Columns) > MaxGenericColumns {
		return nil, specErr("schema has %d columns; the limit is %d", len(spec.Columns), MaxGenericColumns)
	}
	fields := []arrow.Field{{Name: "id", Type: utf8}}
	seen := map[string]bool{}
	for i, c := range spec.Columns {
		var pair []json.RawMessage
		if err := json.Unmarshal(c, &pair); err != nil || len(pair) != 2 {
			return nil, specErr("column %d must be a [name, type] pair", i)
		}
		var name string
		if err := json.Unmarshal(pair[0], &name); err != nil || name == "" {
			return nil, specErr("column %d has no name", i)
		}
		if strings.HasPrefix(name, "_") {
			return nil, specErr("column %q: names starting with '_' are reserved", name)
		}
		if seen[name] {
			return nil, specErr("column %q appears twice", name)
		}
		seen[name] = true
		t, nullable, err := parseColumnType(pair[1], true)
		if err != nil {
			return nil, specErr("column %q: %v", name, err)
		}
		if name == "id" {
			if !arrow.TypeEqual(t, utf8) {
				return nil, specErr(`column "id" must be a string`)
			}
			continue
		}
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: nullable})
	}
	return arrow.NewSchema(fields, nil), nil
}

func specErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", catalog.ErrInvalid, fmt.Sprintf(format, args...))
}

func parseColumnType(raw json.RawMessage, allowList bool) (arrow.DataType, bool, error) {
	var name string
	obj := struct {
		Type     string          `json:"type"`
		Nullable *bool           `json:"nullable"`
		Large    bool            `json:"large"`
		Blob     bool            `json:"blob"`
		Item     json.RawMessage `json:"item"`
	}{}
	if json.Unmarshal(raw, &name) == nil {
		obj.Type = name
	} else if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, false, fmt.Errorf("type must be a name or an object with \"type\"")
	}
	nullable := obj.Nullable == nil || *obj.Nullable
	switch obj.Type {
	case "string":
		if obj.Large {
			return large, nullable, nil
		}
		return utf8, nullable, nil
	case "int32":
		return i32, nullable, nil
	case "int64":
		return i64, nullable, nil
	case "float32":
		return f32, nullable, nil
	case "float64":
		return arrow.PrimitiveTypes.Float64, nullable, nil
	case "bool":
		return arrow.FixedWidthTypes.Boolean, nullable, nil
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nullable, nil
	case "binary":
		return arrow.BinaryTypes.LargeBinary, nullable, nil
	case "list":
		if !allowList {
			return nil, false, fmt.Errorf("lists of lists are not supported")
		}
		if len(obj.Item) == 0 {
			return nil, false, fmt.Errorf("a list needs an \"item\" type")
		}
		item, _, err := parseColumnType(obj.Item, false)
		if err != nil {
			return nil, false, fmt.Errorf("list item: %w", err)
		}
		return arrow.ListOf(item), nullable, nil
	case "vector":
		return nil, false, fmt.Errorf("vector columns are not supported yet")
	}
	return nil, false, fmt.Errorf("unknown type %q (want string, int32, int64, float32, float64, bool, timestamp, binary or list)", obj.Type)
}
