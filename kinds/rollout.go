// The rollout kind: lance-context's rollout records (AddRolloutRequest fields) under a fixed
// schema.
package kinds

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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

// MinimalRolloutBatch builds rollout rows with only the required columns set (id as given,
// rollout_id/problem_id "x", role "assistant", content_type "text/plain", created_at at the epoch
// plus one microsecond); every other column is null. For tests, tools and benchmarks.
func MinimalRolloutBatch(mem memory.Allocator, ids ...string) arrow.RecordBatch {
	return TextRolloutBatch(mem, ids, nil)
}

// TextRolloutBatch is MinimalRolloutBatch with each row's content set to contents[i] (nil: no
// content).
func TextRolloutBatch(mem memory.Allocator, ids, contents []string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, RolloutSchema)
	defer b.Release()
	for r, id := range ids {
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
			case "content":
				if contents == nil {
					b.Field(i).AppendNull()
				} else {
					b.Field(i).(*array.LargeStringBuilder).Append(contents[r])
				}
			default:
				b.Field(i).AppendNull()
			}
		}
	}
	return b.NewRecordBatch()
}
