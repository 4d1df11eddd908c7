// Store-kind schemas: the fixed rollout schema (lance-context compatible field names) and the
// user-declared generic schema (SchemaSpec), both as Arrow schemas for storage/table.
package stores

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/catalog"
)

var (
	utf8  = arrow.BinaryTypes.String
	large = arrow.BinaryTypes.LargeString
	i32   = arrow.PrimitiveTypes.Int32
	i64   = arrow.PrimitiveTypes.Int64
	f32   = arrow.PrimitiveTypes.Float32
)

// RolloutSchema is the schema of every rollout store (lance-context's AddRolloutRequest fields).
var RolloutSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: utf8},
	{Name: "rollout_id", Type: utf8},
	{Name: "problem_id", Type: utf8},
	{Name: "dataset", Type: utf8, Nullable: true},
	{Name: "sequence_order", Type: i32},
	{Name: "role", Type: utf8},
	{Name: "created_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "content", Type: large, Nullable: true},
	{Name: "content_type", Type: utf8},
	{Name: "model_input_string", Type: large, Nullable: true},
	{Name: "model_output_string", Type: large, Nullable: true},
	{Name: "rationale", Type: large, Nullable: true},
	{Name: "problem_text", Type: large, Nullable: true},
	{Name: "user_metadata", Type: large, Nullable: true},
	{Name: "input_tokens", Type: arrow.ListOf(i32), Nullable: true},
	{Name: "output_tokens", Type: arrow.ListOf(i32), Nullable: true},
	{Name: "num_input_tokens", Type: i32, Nullable: true},
	{Name: "num_output_tokens", Type: i32, Nullable: true},
	{Name: "output_logprobs", Type: arrow.ListOf(f32), Nullable: true},
	{Name: "input_logprobs", Type: arrow.ListOf(f32), Nullable: true},
	{Name: "ref_logprobs", Type: arrow.ListOf(f32), Nullable: true},
	{Name: "loss_mask", Type: arrow.ListOf(arrow.PrimitiveTypes.Int8), Nullable: true},
	{Name: "advantage", Type: f32, Nullable: true},
	{Name: "reward", Type: f32, Nullable: true},
	{Name: "raw_reward", Type: f32, Nullable: true},
	{Name: "score", Type: f32, Nullable: true},
	{Name: "grader_id", Type: utf8, Nullable: true},
	{Name: "include_in_training", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "exclude_reason", Type: utf8, Nullable: true},
	{Name: "policy_version", Type: utf8, Nullable: true},
	{Name: "relationships", Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "target_id", Type: utf8},
		arrow.Field{Name: "relation", Type: utf8},
		arrow.Field{Name: "weight", Type: f32, Nullable: true},
	)), Nullable: true},
	{Name: "binary_payload", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
	{Name: "payload_size", Type: i64, Nullable: true},
	{Name: "payload_checksum", Type: utf8, Nullable: true},
	{Name: "artifact_type", Type: utf8, Nullable: true},
	{Name: "metadata", Type: utf8, Nullable: true},
}, nil)

// RolloutJSONColumns hold arbitrary JSON documents stored as text.
var RolloutJSONColumns = map[string]bool{"metadata": true}

// MaxGenericColumns bounds a generic schema.
const MaxGenericColumns = 1024

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

// MinimalRolloutBatch builds rollout rows with only the required columns set (id as given,
// rollout_id/problem_id "x", role "assistant", content_type "text/plain", created_at at the epoch
// plus one microsecond); every other column is null. For tests, tools and benchmarks.
func MinimalRolloutBatch(mem memory.Allocator, ids ...string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, RolloutSchema)
	defer b.Release()
	for _, id := range ids {
		for i, f := range RolloutSchema.Fields() {
			switch f.Name {
			case "id":
				b.Field(i).(*array.StringBuilder).Append(id)
			case "rollout_id", "problem_id":
				b.Field(i).(*array.StringBuilder).Append("x")
			case "role":
				b.Field(i).(*array.StringBuilder).Append("assistant")
			case "content_type":
				b.Field(i).(*array.StringBuilder).Append("text/plain")
			case "sequence_order":
				b.Field(i).(*array.Int32Builder).Append(0)
			case "created_at":
				b.Field(i).(*array.TimestampBuilder).Append(1)
			default:
				b.Field(i).AppendNull()
			}
		}
	}
	return b.NewRecordBatch()
}
