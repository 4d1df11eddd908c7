// JSON Schemas for the OpenAPI document, derived from the handlers' Go types by reflection (json
// tags name the members; omitempty or a pointer makes one optional; pointers and omitempty
// members are nullable), and from a kind's Arrow schema for record bodies. Named struct types
// become components referenced by $ref, so the document and the code cannot drift apart.
package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

type schemaSet struct {
	components map[string]map[string]any
}

func newSchemaSet() *schemaSet { return &schemaSet{components: map[string]map[string]any{}} }

var (
	rawMessageType = reflect.TypeOf(json.RawMessage{})
	timeType       = reflect.TypeOf(time.Time{})
)

// of returns the schema of Go type t (a $ref for named structs, registered once).
func (s *schemaSet) of(t reflect.Type) map[string]any {
	switch {
	case t == rawMessageType:
		return map[string]any{} // any JSON value
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := s.of(t.Elem())
		if _, ref := inner["$ref"]; ref {
			return map[string]any{"allOf": []any{inner}, "nullable": true}
		}
		out := map[string]any{"nullable": true}
		for k, v := range inner {
			out[k] = v
		}
		return out
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Float32:
		return map[string]any{"type": "number", "format": "float"}
	case reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"} // base64, as encoding/json writes []byte
		}
		return map[string]any{"type": "array", "items": s.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": s.of(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := t.Name()
		if name == "" {
			return s.object(t)
		}
		if _, done := s.components[name]; !done {
			s.components[name] = nil // reserve: recursive types refer to themselves
			s.components[name] = s.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

// object is a struct's schema: its JSON members (embedded structs' members inlined).
func (s *schemaSet) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			schema := s.of(f.Type)
			if doc := fieldDocs[t.Name()+"."+f.Name]; doc != "" {
				schema = withDescription(schema, doc)
			}
			props[name] = schema
			if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
				required = append(required, name)
			}
		}
	}
	walk(t)
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

func withDescription(schema map[string]any, doc string) map[string]any {
	if _, ref := schema["$ref"]; ref {
		return map[string]any{"allOf": []any{schema}, "description": doc}
	}
	out := map[string]any{"description": doc}
	for k, v := range schema {
		out[k] = v
	}
	return out
}

// fieldDocs describe members whose name does not say enough.
var fieldDocs = map[string]string{
	"StoreInfo.Version":          "the base table's version (absent in listings)",
	"AppendResponse.Version":     "the base table's version when the append was acknowledged",
	"StoreList.NextCursor":       "present when a ?limit page has more stores after it",
	"RecordsPage.NextCursor":     "the keyset cursor of the next page; absent on the last",
	"RowsPage.NextCursor":        "the keyset cursor of the next page; absent on the last",
	"MergeWALResponse.Reclaimed": "pending generations merged into the base table",
}

// arrowObject is the JSON object of one row of an Arrow schema (a kind's records): json columns
// are any JSON value, timestamps RFC 3339 strings, binary base64.
func arrowObject(schema *arrow.Schema, jsonColumns map[string]bool, required ...string) map[string]any {
	props := map[string]any{}
	for _, f := range schema.Fields() {
		if strings.HasPrefix(f.Name, "_") {
			continue
		}
		var p map[string]any
		if jsonColumns[f.Name] {
			p = map[string]any{}
		} else {
			p = arrowType(f.Type)
		}
		if f.Nullable {
			p["nullable"] = true
		}
		props[f.Name] = p
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

func arrowType(t arrow.DataType) map[string]any {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return map[string]any{"type": "string"}
	case arrow.BINARY, arrow.LARGE_BINARY:
		return map[string]any{"type": "string", "format": "byte"}
	case arrow.BOOL:
		return map[string]any{"type": "boolean"}
	case arrow.INT8, arrow.INT16, arrow.INT32:
		return map[string]any{"type": "integer", "format": "int32"}
	case arrow.INT64, arrow.UINT32, arrow.UINT64:
		return map[string]any{"type": "integer", "format": "int64"}
	case arrow.FLOAT32:
		return map[string]any{"type": "number", "format": "float"}
	case arrow.FLOAT64:
		return map[string]any{"type": "number", "format": "double"}
	case arrow.TIMESTAMP:
		return map[string]any{"type": "string", "format": "date-time"}
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST:
		return map[string]any{"type": "array", "items": arrowType(t.(arrow.ListLikeType).Elem())}
	case arrow.STRUCT:
		st := t.(*arrow.StructType)
		return arrowObject(arrow.NewSchema(st.Fields(), nil), nil)
	}
	return map[string]any{}
}
