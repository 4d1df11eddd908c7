// The datagen kind: lance-context's append-only checkpoint event log (one row per DatagenEvent)
// under a fixed schema. Its key is event_key = item_id + NUL + event_id: the event id makes a
// retried append idempotent (newest _seq wins), and the item prefix clusters each item's events
// in key order, so an item's fold reads a key range, never the whole log.
package kinds

import "github.com/apache/arrow-go/v18/arrow"

// DatagenKeyColumn is the key column of datagen stores.
const DatagenKeyColumn = "event_key"

var (
	bin = arrow.BinaryTypes.LargeBinary
	b1  = arrow.FixedWidthTypes.Boolean
)

// DatagenSchema is the schema of every datagen store: the key, then lance-context's physical
// columns of its checkpoint log, in its order.
var DatagenSchema = arrow.NewSchema([]arrow.Field{
	{Name: DatagenKeyColumn, Type: utf8},
	{Name: "event_id", Type: utf8},
	{Name: "item_id", Type: utf8},
	{Name: "root_item_id", Type: utf8},
	{Name: "parent_item_id", Type: utf8, Nullable: true},
	{Name: "item_seq", Type: i64},
	{Name: "checkpoint_id", Type: utf8},
	{Name: "event_type", Type: utf8},
	{Name: "step_name", Type: utf8, Nullable: true},
	{Name: "step_kind", Type: utf8, Nullable: true},
	{Name: "step_index", Type: i64, Nullable: true},
	{Name: "enclosing_step", Type: utf8, Nullable: true},
	{Name: "selector_step", Type: utf8, Nullable: true},
	{Name: "attempt", Type: i32},
	{Name: "run_id", Type: utf8},
	{Name: "writer_epoch", Type: utf8},
	{Name: "field_name", Type: utf8, Nullable: true},
	{Name: "field_type", Type: utf8, Nullable: true},
	{Name: "codec_version", Type: i32, Nullable: true},
	{Name: "value_kind", Type: utf8, Nullable: true},
	{Name: "value_i64", Type: i64, Nullable: true},
	{Name: "value_f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "value_bool", Type: b1, Nullable: true},
	{Name: "value_str", Type: large, Nullable: true},
	{Name: "value_json", Type: large, Nullable: true},
	{Name: "value_blob", Type: bin, Nullable: true},
	{Name: "payload_size", Type: i64, Nullable: true},
	{Name: "payload_checksum", Type: utf8, Nullable: true},
	{Name: "query_tags_json", Type: large, Nullable: true},
	{Name: "status", Type: utf8, Nullable: true},
	{Name: "error_type", Type: utf8, Nullable: true},
	{Name: "error_dump", Type: large, Nullable: true},
	{Name: "traceback", Type: large, Nullable: true},
	{Name: "event_ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "schema_version", Type: i32},
}, nil)
