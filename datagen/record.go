// The Arrow layout of the log: events to a record of kinds.DatagenSchema (the append path) and
// the rows of a read back to events (the read paths). Values are stored in the typed value_*
// column of their kind; a blob's bytes in value_blob with payload_size and payload_checksum.
package datagen

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/kinds"
)

// column positions in kinds.DatagenSchema.
var col = func() map[string]int {
	m := map[string]int{}
	for i, f := range kinds.DatagenSchema.Fields() {
		m[f.Name] = i
	}
	return m
}()

// ToRecord builds the log rows of validated events; events without event_ts get now. The caller
// releases the record.
func ToRecord(events []Event, now time.Time, mem memory.Allocator) arrow.RecordBatch {
	b := newRecordBuilder(mem, now)
	defer b.release()
	b.size(len(events))
	// The string columns' bytes, counted first: reserved once, they are not regrown (and copied)
	// row by row.
	for _, c := range b.sized {
		n := 0
		for i := range events {
			n += c.bytes(&events[i])
		}
		c.b.ReserveData(n)
	}
	for i := range events {
		b.add(&events[i])
	}
	return b.finish()
}

// recordBuilder appends events as rows of kinds.DatagenSchema.
type recordBuilder struct {
	b                                                       *array.RecordBuilder
	now                                                     time.Time // event_ts of events without one
	key, eventID, itemID, rootID, parent, checkpoint, etype *array.StringBuilder
	stepName, stepKind, enclosing, selector                 *array.StringBuilder
	runID, epoch, fieldName, fieldType, status, errType     *array.StringBuilder
	tags, errDump, tb                                       *array.LargeStringBuilder
	seq, stepIndex                                          *array.Int64Builder
	attempt, codec, schemaVersion                           *array.Int32Builder
	ts                                                      *array.TimestampBuilder
	vb                                                      valueBuilders
	sized                                                   []sizedColumn // the columns whose bytes ToRecord counts up front
}

// sizedColumn is a string column with the bytes an event puts in it.
type sizedColumn struct {
	b     *array.StringBuilder
	bytes func(*Event) int
}

func newRecordBuilder(mem memory.Allocator, now time.Time) *recordBuilder {
	b := array.NewRecordBuilder(mem, kinds.DatagenSchema)
	s := func(name string) *array.StringBuilder { return b.Field(col[name]).(*array.StringBuilder) }
	ls := func(name string) *array.LargeStringBuilder { return b.Field(col[name]).(*array.LargeStringBuilder) }
	i64 := func(name string) *array.Int64Builder { return b.Field(col[name]).(*array.Int64Builder) }
	i32 := func(name string) *array.Int32Builder { return b.Field(col[name]).(*array.Int32Builder) }
	r := &recordBuilder{b: b, now: now,
		key: s(kinds.DatagenKeyColumn), eventID: s("event_id"), itemID: s("item_id"), rootID: s("root_item_id"),
		parent: s("parent_item_id"), checkpoint: s("checkpoint_id"), etype: s("event_type"),
		stepName: s("step_name"), stepKind: s("step_kind"), enclosing: s("enclosing_step"), selector: s("selector_step"),
		runID: s("run_id"), epoch: s("writer_epoch"), fieldName: s("field_name"), fieldType: s("field_type"),
		status: s("status"), errType: s("error_type"),
		tags: ls("query_tags_json"), errDump: ls("error_dump"), tb: ls("traceback"),
		seq: i64("item_seq"), stepIndex: i64("step_index"),
		attempt: i32("attempt"), codec: i32("codec_version"), schemaVersion: i32("schema_version"),
		ts: b.Field(col["event_ts"]).(*array.TimestampBuilder),
		vb: valueBuilders{kind: s("value_kind"), i: i64("value_i64"), f: b.Field(col["value_f64"]).(*array.Float64Builder),
			b: b.Field(col["value_bool"]).(*array.BooleanBuilder), s: ls("value_str"), j: ls("value_json"),
			blob: b.Field(col["value_blob"]).(*array.BinaryBuilder), size: i64("payload_size"), sum: s("payload_checksum")},
	}
	optLen := func(v *string) int {
		if v == nil {
			return 0
		}
		return len(*v)
	}
	r.sized = []sizedColumn{
		{r.key, func(e *Event) int { return len(e.ItemID) + 1 + len(e.EventID) }},
		{r.eventID, func(e *Event) int { return len(e.EventID) }},
		{r.itemID, func(e *Event) int { return len(e.ItemID) }},
		{r.rootID, func(e *Event) int { return len(e.RootItemID) }},
		{r.parent, func(e *Event) int { return optLen(e.ParentItemID) }},
		{r.checkpoint, func(e *Event) int { return len(e.CheckpointID) }},
		{r.etype, func(e *Event) int { return len(e.EventType) }},
		{r.stepName, func(e *Event) int { return optLen(e.StepName) }},
		{r.stepKind, func(e *Event) int { return optLen(e.StepKind) }},
		{r.runID, func(e *Event) int { return len(e.RunID) }},
		{r.epoch, func(e *Event) int { return len(e.WriterEpoch) }},
		{r.fieldName, func(e *Event) int { return optLen(e.FieldName) }},
		{r.fieldType, func(e *Event) int { return optLen(e.FieldType) }},
	}
	return r
}

// size makes room for exactly rows rows in every column: Reserve would round each up to the
// next power of two (up to twice the rows' memory, held for as long as the record lives).
func (r *recordBuilder) size(rows int) {
	for _, f := range r.b.Fields() {
		f.Resize(rows)
	}
}

// expect makes room for rows rows in all, the variable-length columns' bytes extrapolated from
// the rows added so far (which must be some).
func (r *recordBuilder) expect(rows int) {
	have := r.eventID.Len()
	if rows <= have || have == 0 {
		return
	}
	for _, f := range r.b.Fields() {
		if v, ok := f.(interface {
			DataLen() int
			ReserveData(int)
		}); ok {
			v.ReserveData(v.DataLen() / have * (rows - have) * 9 / 8)
		}
	}
	r.size(rows)
}

// rows is how many rows have been added.
func (r *recordBuilder) rows() int { return r.eventID.Len() }

// add appends e (validated) as one row.
func (r *recordBuilder) add(e *Event) {
	r.key.Append(Key(e.ItemID, e.EventID))
	r.eventID.Append(e.EventID)
	r.itemID.Append(e.ItemID)
	r.rootID.Append(e.RootItemID)
	appendOptional(r.parent, e.ParentItemID)
	r.seq.Append(e.ItemSeq)
	r.checkpoint.Append(e.CheckpointID)
	r.etype.Append(e.EventType)
	appendOptional(r.stepName, e.StepName)
	appendOptional(r.stepKind, e.StepKind)
	appendOptional(r.stepIndex, e.StepIndex)
	appendOptional(r.enclosing, e.EnclosingStep)
	appendOptional(r.selector, e.SelectorStep)
	r.attempt.Append(e.Attempt)
	r.runID.Append(e.RunID)
	r.epoch.Append(e.WriterEpoch)
	appendOptional(r.fieldName, e.FieldName)
	appendOptional(r.fieldType, e.FieldType)
	appendOptional(r.codec, e.CodecVersion)
	r.vb.append(e.Value)
	if e.QueryTags == nil {
		r.tags.AppendNull()
	} else {
		r.tags.Append(compactJSON(e.QueryTags))
	}
	appendOptional(r.status, e.Status)
	appendOptional(r.errType, e.ErrorType)
	appendOptional(r.errDump, e.ErrorDump)
	appendOptional(r.tb, e.Traceback)
	t := r.now
	if e.EventTS != nil {
		t = *e.EventTS
	}
	r.ts.Append(arrow.Timestamp(t.UnixMicro()))
	r.schemaVersion.Append(e.SchemaVersion)
}

// appendOptional appends *v, or a null when v is nil.
func appendOptional[T any, B interface {
	Append(T)
	AppendNull()
}](b B, v *T) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(*v)
}

// finish returns the rows added as a record (the caller releases it).
func (r *recordBuilder) finish() arrow.RecordBatch { return r.b.NewRecordBatch() }

func (r *recordBuilder) release() { r.b.Release() }

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// valueBuilders are the value columns' builders.
type valueBuilders struct {
	kind, sum *array.StringBuilder
	i, size   *array.Int64Builder
	f         *array.Float64Builder
	b         *array.BooleanBuilder
	s, j      *array.LargeStringBuilder
	blob      *array.BinaryBuilder
}

// append fills the value columns of one row (all null without a value; v is validated).
func (vb *valueBuilders) append(v *Value) {
	if v == nil {
		vb.kind.AppendNull()
	} else {
		vb.kind.Append(v.Kind)
	}
	var x any
	if v != nil && v.Kind != KindBlob && v.Kind != KindJSON {
		x, _ = decodeScalar(v.Value)
	}
	kind := ""
	if v != nil {
		kind = v.Kind
	}
	if n, ok := x.(json.Number); ok && kind == KindInt {
		i, _ := n.Int64()
		vb.i.Append(i)
	} else {
		vb.i.AppendNull()
	}
	if n, ok := x.(json.Number); ok && kind == KindFloat {
		f, _ := n.Float64()
		vb.f.Append(f)
	} else {
		vb.f.AppendNull()
	}
	if b, ok := x.(bool); ok && kind == KindBool {
		vb.b.Append(b)
	} else {
		vb.b.AppendNull()
	}
	if s, ok := x.(string); ok && kind == KindStr {
		vb.s.Append(s)
	} else {
		vb.s.AppendNull()
	}
	if kind == KindJSON {
		vb.j.Append(compactJSON(v.Value))
	} else {
		vb.j.AppendNull()
	}
	if kind == KindBlob {
		vb.blob.Append(v.Bytes)
		if v.Size != nil {
			vb.size.Append(*v.Size)
		} else {
			vb.size.Append(int64(len(v.Bytes)))
		}
		if v.Checksum == nil {
			vb.sum.AppendNull()
		} else {
			vb.sum.Append(*v.Checksum)
		}
	} else {
		vb.blob.AppendNull()
		vb.size.AppendNull()
		vb.sum.AppendNull()
	}
}

// stringColumn is a utf8 or large_utf8 column; bytesColumn a binary or large_binary one.
type (
	stringColumn interface {
		IsNull(int) bool
		Value(int) string
	}
	bytesColumn interface {
		IsNull(int) bool
		Value(int) []byte
	}
)

// intColumn reads a signed integer column of any width.
type intColumn struct{ a arrow.Array }

func (c intColumn) IsNull(i int) bool { return c.a.IsNull(i) }
func (c intColumn) Value(i int) int64 {
	switch a := c.a.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int8:
		return int64(a.Value(i))
	}
	return 0
}

// compatible reports whether a column of type got reads as the log's type want: the same type,
// the other width of a string or binary type, a narrower signed integer, or any timestamp unit.
func compatible(got, want arrow.DataType) bool {
	if arrow.TypeEqual(got, want) {
		return true
	}
	switch want.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return got.ID() == arrow.STRING || got.ID() == arrow.LARGE_STRING
	case arrow.BINARY, arrow.LARGE_BINARY:
		return got.ID() == arrow.BINARY || got.ID() == arrow.LARGE_BINARY
	case arrow.INT64:
		return got.ID() == arrow.INT32 || got.ID() == arrow.INT16 || got.ID() == arrow.INT8
	case arrow.INT32: // a wider integer too (pandas and DuckDB write int64): values are range-checked
		return got.ID() == arrow.INT64 || got.ID() == arrow.INT16 || got.ID() == arrow.INT8
	case arrow.TIMESTAMP:
		return got.ID() == arrow.TIMESTAMP
	}
	return false
}

// FromRecord reads rows back as events. Columns may be any subset of the schema that includes
// the identity columns (a read that leaves out value_blob gets blobs without bytes), of the
// log's types or compatible ones. A stored row that does not decode is ErrInvalid naming the
// event.
func FromRecord(rec arrow.RecordBatch) ([]Event, error) {
	idx := map[string]int{}
	for i, f := range rec.Schema().Fields() {
		idx[f.Name] = i
	}
	strCol := func(name string) stringColumn {
		if i, ok := idx[name]; ok {
			if c, ok := rec.Column(i).(stringColumn); ok {
				return c
			}
		}
		return nil
	}
	intCol := func(name string) *intColumn {
		if i, ok := idx[name]; ok {
			switch rec.Column(i).DataType().ID() {
			case arrow.INT64, arrow.INT32, arrow.INT16, arrow.INT8:
				return &intColumn{rec.Column(i)}
			}
		}
		return nil
	}
	eventID, itemID, rootID, seq := strCol("event_id"), strCol("item_id"), strCol("root_item_id"), intCol("item_seq")
	if eventID == nil || itemID == nil || rootID == nil || seq == nil {
		return nil, invalidf("a batch of events needs the event_id, item_id, root_item_id and item_seq columns")
	}
	parent, checkpoint, etype := strCol("parent_item_id"), strCol("checkpoint_id"), strCol("event_type")
	stepName, stepKind, stepIndex := strCol("step_name"), strCol("step_kind"), intCol("step_index")
	enclosing, selector, attempt := strCol("enclosing_step"), strCol("selector_step"), intCol("attempt")
	runID, epoch, fieldName, fieldType, codec := strCol("run_id"), strCol("writer_epoch"), strCol("field_name"), strCol("field_type"), intCol("codec_version")
	vkind, vi, vs, vj := strCol("value_kind"), intCol("value_i64"), strCol("value_str"), strCol("value_json")
	size, sum, tags := intCol("payload_size"), strCol("payload_checksum"), strCol("query_tags_json")
	status, errType, errDump, tb := strCol("status"), strCol("error_type"), strCol("error_dump"), strCol("traceback")
	schemaVersion := intCol("schema_version")
	var vf *array.Float64
	var vb *array.Boolean
	var blob bytesColumn
	var ts *array.Timestamp
	if i, ok := idx["value_f64"]; ok {
		vf, _ = rec.Column(i).(*array.Float64)
	}
	if i, ok := idx["value_bool"]; ok {
		vb, _ = rec.Column(i).(*array.Boolean)
	}
	if i, ok := idx["value_blob"]; ok {
		blob, _ = rec.Column(i).(bytesColumn)
	}
	if i, ok := idx["event_ts"]; ok {
		ts, _ = rec.Column(i).(*array.Timestamp)
	}

	// The optional fields point into a few slices allocated for the whole batch (a fold reads
	// thousands of events: one allocation per field would be most of its cost). Capacity is
	// never exceeded, so the pointers stay into these arrays.
	n := int(rec.NumRows())
	strs, ints := make([]string, 0, 14*n), make([]int64, 0, 2*n) // 14 optional string fields, 2 integer ones
	optS := func(c stringColumn, r int) *string {
		if c == nil || c.IsNull(r) {
			return nil
		}
		strs = append(strs, c.Value(r))
		return &strs[len(strs)-1]
	}
	optI := func(c *intColumn, r int) *int64 {
		if c == nil || c.IsNull(r) {
			return nil
		}
		ints = append(ints, c.Value(r))
		return &ints[len(ints)-1]
	}
	var rangeErr error
	i32 := func(c *intColumn, r int, name string) int32 {
		v := c.Value(r)
		if v < math.MinInt32 || v > math.MaxInt32 {
			rangeErr = invalidf("row %d: %s %d does not fit in 32 bits", r, name, v)
		}
		return int32(v)
	}
	optI32 := func(c *intColumn, r int, name string) *int32 {
		if c == nil || c.IsNull(r) {
			return nil
		}
		v := i32(c, r, name)
		return &v
	}
	reqS := func(c stringColumn, r int) string {
		if c == nil || c.IsNull(r) {
			return ""
		}
		return c.Value(r)
	}
	out := make([]Event, rec.NumRows())
	for r := range out {
		e := &out[r]
		e.EventID, e.ItemID, e.RootItemID, e.ItemSeq = reqS(eventID, r), reqS(itemID, r), reqS(rootID, r), seq.Value(r)
		e.ParentItemID = optS(parent, r)
		e.CheckpointID, e.EventType = reqS(checkpoint, r), reqS(etype, r)
		e.StepName, e.StepKind, e.StepIndex = optS(stepName, r), optS(stepKind, r), optI(stepIndex, r)
		e.EnclosingStep, e.SelectorStep = optS(enclosing, r), optS(selector, r)
		if attempt != nil {
			e.Attempt = i32(attempt, r, "attempt")
		}
		e.RunID, e.WriterEpoch = reqS(runID, r), reqS(epoch, r)
		e.FieldName, e.FieldType = optS(fieldName, r), optS(fieldType, r)
		e.CodecVersion = optI32(codec, r, "codec_version")
		if k := optS(vkind, r); k != nil {
			v := &Value{Kind: *k}
			bad := func() error { return invalidf("event '%s' has value_kind %s without its value", e.EventID, *k) }
			switch *k {
			case KindInt:
				if vi == nil || vi.IsNull(r) {
					return nil, bad()
				}
				v.Value, _ = json.Marshal(vi.Value(r))
			case KindFloat:
				if vf == nil || vf.IsNull(r) {
					return nil, bad()
				}
				f := vf.Value(r)
				if math.IsNaN(f) || math.IsInf(f, 0) {
					return nil, invalidf("event '%s' has a float value JSON cannot carry (%v)", e.EventID, f)
				}
				v.Value, _ = json.Marshal(f)
			case KindBool:
				if vb == nil || vb.IsNull(r) {
					return nil, bad()
				}
				v.Value, _ = json.Marshal(vb.Value(r))
			case KindStr:
				if vs == nil || vs.IsNull(r) {
					return nil, bad()
				}
				v.Value, _ = json.Marshal(vs.Value(r))
			case KindJSON:
				if vj == nil || vj.IsNull(r) {
					return nil, bad()
				}
				if !json.Valid([]byte(vj.Value(r))) {
					return nil, invalidf("event '%s' contains invalid value_json", e.EventID)
				}
				v.Value = json.RawMessage(vj.Value(r))
			case KindBlob:
				v.Size = optI(size, r)
				if v.Size == nil {
					return nil, invalidf("event '%s': payload_size must not be null for a blob", e.EventID)
				}
				v.Checksum = optS(sum, r)
				if blob != nil && !blob.IsNull(r) {
					v.Bytes = bytes.Clone(blob.Value(r))
				}
			default:
				return nil, invalidf("event '%s' has unsupported value_kind '%s'", e.EventID, *k)
			}
			e.Value = v
		}
		if t := optS(tags, r); t != nil {
			if !json.Valid([]byte(*t)) {
				return nil, invalidf("event '%s' contains invalid query_tags_json", e.EventID)
			}
			e.QueryTags = json.RawMessage(*t)
		}
		e.Status, e.ErrorType, e.ErrorDump, e.Traceback = optS(status, r), optS(errType, r), optS(errDump, r), optS(tb, r)
		if ts != nil && !ts.IsNull(r) {
			unit := ts.DataType().(*arrow.TimestampType).Unit
			t := ts.Value(r).ToTime(unit).UTC()
			e.EventTS = &t
		}
		if schemaVersion != nil {
			e.SchemaVersion = i32(schemaVersion, r, "schema_version")
		}
		if rangeErr != nil {
			return nil, rangeErr
		}
	}
	return out, nil
}

// requiredColumns must be present, without nulls, in an Arrow append.
var requiredColumns = []string{"event_id", "item_id", "root_item_id", "item_seq", "checkpoint_id", "event_type",
	"attempt", "run_id", "writer_epoch", "schema_version"}

// FromArrow reads the events of an Arrow append: a batch of the log's columns (any subset that
// holds the required ones, each once, of the log's type; the key column, when sent, is ignored —
// it is derived). Anything else is ErrInvalid naming the column.
func FromArrow(rec arrow.RecordBatch) ([]Event, error) {
	seen := map[string]bool{}
	for i, f := range rec.Schema().Fields() {
		if seen[f.Name] {
			return nil, invalidf("column %q appears twice", f.Name)
		}
		seen[f.Name] = true
		j, ok := col[f.Name]
		if !ok {
			return nil, invalidf("unknown column %q (the log's columns are listed in docs/format/datagen.md)", f.Name)
		}
		if want := kinds.DatagenSchema.Field(j).Type; !compatible(f.Type, want) {
			return nil, invalidf("column %q is %s; want %s", f.Name, f.Type, want)
		}
		if slices.Contains(requiredColumns, f.Name) && rec.Column(i).NullN() > 0 {
			return nil, invalidf("column %q must not hold nulls", f.Name)
		}
	}
	for _, name := range requiredColumns {
		if !seen[name] {
			return nil, invalidf("missing column %q", name)
		}
	}
	if rec.NumRows() == 0 {
		return nil, invalidf("events array must not be empty")
	}
	return FromRecord(rec)
}
