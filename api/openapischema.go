// JSON Schemas for the OpenAPI document, generated from the handlers' Go types by kin-openapi's
// openapi3gen (json tags name the members; omitempty or a pointer makes one optional; pointers are
// nullable), and from a kind's Arrow schema for record bodies. Named struct types become
// components referenced by $ref, so the document and the code cannot drift apart.
package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
)

// schemaSet generates the schemas of Go types (kin-openapi's openapi3gen) into one set of
// components.
type schemaSet struct {
	gen        *openapi3gen.Generator
	components openapi3.Schemas // named structs, by name
	extra      map[string]any   // components given by schema (a kind's Arrow schema)
}

func newSchemaSet() *schemaSet {
	return &schemaSet{components: openapi3.Schemas{}, extra: map[string]any{},
		gen: openapi3gen.NewGenerator(
			openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
			openapi3gen.SchemaCustomizer(describeStruct))}
}

// of returns the schema of Go type t as a JSON value (a $ref for named structs, registered once).
func (s *schemaSet) of(t reflect.Type) map[string]any {
	ref, err := s.gen.NewSchemaRefForValue(reflect.New(t).Elem().Interface(), s.components)
	if err != nil {
		panic(fmt.Sprintf("api: the OpenAPI schema of %s: %v", t, err)) // the route table's types are fixed at build time
	}
	return jsonValue(ref)
}

// componentsJSON is every component, as JSON values.
func (s *schemaSet) componentsJSON() map[string]any {
	out := map[string]any{}
	for name, ref := range s.components {
		out[name] = jsonValue(ref.Value)
	}
	maps.Copy(out, s.extra)
	return out
}

// jsonValue is v (a schema) as the generic JSON value it marshals to.
func jsonValue(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("api: marshal an OpenAPI schema: %v", err))
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("api: unmarshal an OpenAPI schema: %v", err))
	}
	return out
}

// describeStruct adds what openapi3gen leaves to its caller for a struct's schema: its required
// members (json tags without omitempty, not pointers; embedded structs' members inlined) and the
// descriptions of members whose name does not say enough (fieldDocs).
func describeStruct(_ string, t reflect.Type, _ reflect.StructTag, schema *openapi3.Schema) error {
	if t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Time]() {
		return nil
	}
	var walk func(st reflect.Type)
	walk = func(st reflect.Type) {
		for i := range st.NumField() {
			f := st.Field(i)
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
			if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer && !slices.Contains(schema.Required, name) {
				schema.Required = append(schema.Required, name)
			}
			if doc := fieldDocs[st.Name()+"."+f.Name]; doc != "" {
				if p := schema.Properties[name]; p != nil && p.Ref == "" && p.Value != nil {
					p.Value.Description = doc
				}
			}
		}
	}
	walk(t)
	return nil
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
