package datagen

import (
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares v's JSON with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	path := "testdata/" + name
	if *update {
		require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

// lance-context's DTO field names (FoldedDatagenItemDto, DatagenFieldStateDto,
// DatagenStepCursorDto, DatagenFailureDto, DatagenRunOverviewDto): every key Strata answers
// with is one of them.
var lanceContextNames = map[string][]string{
	"item":     {"item_id", "root_item_id", "parent_item_id", "status", "last_item_seq", "last_attempt", "fields", "trajectory", "started", "completed", "query_tags", "blob_event_ids"},
	"field":    {"mode", "value", "values", "field_type", "codec_version"},
	"value":    {"kind", "value", "bytes", "size", "checksum"},
	"cursor":   {"step_name", "step_kind", "step_index", "enclosing_step", "selector_step", "item_seq"},
	"failure":  {"at", "run_id", "attempt", "error_type", "error_dump", "traceback"},
	"overview": {"items", "running", "completed", "filtered", "failures", "failures_by_error_type", "failures_by_run", "completed_steps"},
	"bucket":   {"failures", "failures_by_error_type", "sample_root_item_ids"},
	"event": {"event_id", "item_id", "root_item_id", "parent_item_id", "item_seq", "checkpoint_id", "event_type", "step_name", "step_kind",
		"step_index", "enclosing_step", "selector_step", "attempt", "run_id", "writer_epoch", "field_name", "field_type", "codec_version",
		"value", "query_tags", "status", "error_type", "error_dump", "traceback", "event_ts", "schema_version"},
}

func keysOf(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func requireNames(t *testing.T, dto string, v any) {
	t.Helper()
	for _, k := range keysOf(t, v) {
		require.Contains(t, lanceContextNames[dto], k, "%s field %q is not lance-context's", dto, k)
	}
}

func loadEvents(t *testing.T) []Event {
	data, err := os.ReadFile("testdata/events.json")
	require.NoError(t, err)
	evs, err := decodeAll(data)
	require.NoError(t, err)
	require.NoError(t, validateBatch(t, false, evs))
	return evs
}

// The fold, failures and overview of a fixed history, in lance-context's DTO shapes (golden
// files), whatever order the events arrive in; every event survives the Arrow layout unchanged.
func TestFoldOfAHistoryInLanceContextsShapes(t *testing.T) {
	evs := loadEvents(t)
	item, err := Fold(evs)
	require.NoError(t, err)
	golden(t, "fold.golden.json", item)
	requireNames(t, "item", item)
	for _, f := range item.Fields {
		requireNames(t, "field", f)
	}
	requireNames(t, "value", item.Fields["image"].Value)
	requireNames(t, "cursor", item.Trajectory[0])
	require.Equal(t, "completed", item.Status)
	require.Equal(t, []byte("\x00\x01bin"), item.Fields["image"].Value.Bytes)

	reversed := slices.Clone(evs)
	slices.Reverse(reversed)
	again, err := Fold(reversed)
	require.NoError(t, err)
	require.Equal(t, item, again, "the fold orders by item_seq, not arrival")

	failures, err := Failures(evs)
	require.NoError(t, err)
	golden(t, "failures.golden.json", failures)
	requireNames(t, "failure", failures[0])

	s := newSums()
	c, err := contributionOf(evs)
	require.NoError(t, err)
	s.add(c, 1)
	o := s.overview()
	golden(t, "overview.golden.json", o)
	requireNames(t, "overview", o)
	requireNames(t, "bucket", o.FailuresByRun["run-1"])

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	now := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	rec := ToRecord(evs, now, mem)
	defer rec.Release()
	back, err := FromRecord(rec)
	require.NoError(t, err)
	for i := range evs {
		requireNames(t, "event", back[i])
		want := evs[i]
		if want.EventTS == nil {
			want.EventTS = &now
		}
		require.Equal(t, want.EventTS.UnixMicro(), back[i].EventTS.UnixMicro())
		want.EventTS, back[i].EventTS = nil, nil
		if want.Value != nil && want.Value.Kind == KindJSON {
			require.JSONEq(t, string(want.Value.Value), string(back[i].Value.Value))
			want.Value, back[i].Value = nil, nil
		}
		if want.QueryTags != nil {
			require.JSONEq(t, string(want.QueryTags), string(back[i].QueryTags))
			want.QueryTags, back[i].QueryTags = nil, nil
		}
		require.Equal(t, want, back[i], "event %d round-trips", i)
	}
}

func TestFoldRefusesConflictsAndMixedFields(t *testing.T) {
	evs := loadEvents(t)
	never, err := Fold(evs[1:])
	require.NoError(t, err)
	require.Nil(t, never, "no ITEM_CREATED: never started")

	clash := slices.Clone(evs)
	clash[3].ItemSeq = 2
	_, err = Fold(clash)
	require.ErrorContains(t, err, "conflicting events at item_seq 2")

	mixed := slices.Clone(evs)
	mixed[7].EventType = FieldAppend
	_, err = Fold(mixed)
	require.ErrorContains(t, err, "mixes FIELD_SET and FIELD_APPEND")

	codec := slices.Clone(evs)
	v2 := int32(2)
	codec[8].CodecVersion = &v2
	_, err = Fold(codec)
	require.ErrorContains(t, err, "different codecs")
}

// An Arrow append: the log's columns (compatible types accepted), nothing else, each once.
func TestFromArrowNamesWhatIsWrong(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := ToRecord(loadEvents(t), time.Now(), mem)
	defer rec.Release()
	evs, err := FromArrow(rec)
	require.NoError(t, err)
	require.Len(t, evs, 11)

	drop := func(name string) arrow.RecordBatch {
		var fields []arrow.Field
		var cols []arrow.Array
		for i, f := range rec.Schema().Fields() {
			if f.Name != name {
				fields, cols = append(fields, f), append(cols, rec.Column(i))
			}
		}
		return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	}
	noRun := drop("run_id")
	defer noRun.Release()
	_, err = FromArrow(noRun)
	require.ErrorContains(t, err, `missing column "run_id"`)

	extra := array.NewRecordBatch(arrow.NewSchema(append(rec.Schema().Fields(), arrow.Field{Name: "surprise", Type: arrow.PrimitiveTypes.Int64}), nil),
		append(rec.Columns(), rec.Column(kindsIndex("item_seq"))), rec.NumRows())
	defer extra.Release()
	_, err = FromArrow(extra)
	require.ErrorContains(t, err, `unknown column "surprise"`)

	twice := array.NewRecordBatch(arrow.NewSchema(append(rec.Schema().Fields(), rec.Schema().Field(kindsIndex("run_id"))), nil),
		append(rec.Columns(), rec.Column(kindsIndex("run_id"))), rec.NumRows())
	defer twice.Release()
	_, err = FromArrow(twice)
	require.ErrorContains(t, err, `"run_id" appears twice`)

	fields := slices.Clone(rec.Schema().Fields())
	cols := slices.Clone(rec.Columns())
	fields[kindsIndex("item_seq")] = arrow.Field{Name: "item_seq", Type: arrow.BinaryTypes.String}
	cols[kindsIndex("item_seq")] = rec.Column(kindsIndex("run_id"))
	wrong := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer wrong.Release()
	_, err = FromArrow(wrong)
	require.ErrorContains(t, err, `column "item_seq" is utf8; want int64`)
}

func kindsIndex(name string) int { return col[name] }

// A step completed again (a retried attempt) is one position in completed but two entries in the
// trajectory; positions differing only in an absent vs an empty enclosing step stay apart, in
// order (step name, index, absent before present).
func TestFoldListsEachStepPositionOnce(t *testing.T) {
	var evs []Event
	add := func(typ, step string, index int64, enclosing *string) {
		e := Event{EventID: EventID("i", "c", uint32(len(evs))), ItemID: "i", RootItemID: "i", ItemSeq: int64(len(evs)),
			CheckpointID: "c", EventType: typ, RunID: "r", WriterEpoch: "w", SchemaVersion: SchemaVersion}
		if typ != ItemCreated {
			kind := "leaf"
			e.StepName, e.StepKind, e.StepIndex, e.EnclosingStep = &step, &kind, &index, enclosing
		}
		evs = append(evs, e)
	}
	add(ItemCreated, "", 0, nil)
	add(StepStarted, "b", 0, nil)
	add(StepCompleted, "b", 0, nil)
	add(StepStarted, "b", 0, nil)
	add(StepCompleted, "b", 0, nil) // the retry
	add(StepCompleted, "a", 1, ptr(""))
	add(StepCompleted, "a", 1, nil)
	add(StepCompleted, "a", 0, nil)
	item, err := Fold(evs)
	require.NoError(t, err)
	require.Len(t, item.Trajectory, 5)
	require.Equal(t, []int64{2, 4, 5, 6, 7}, []int64{item.Trajectory[0].ItemSeq, item.Trajectory[1].ItemSeq,
		item.Trajectory[2].ItemSeq, item.Trajectory[3].ItemSeq, item.Trajectory[4].ItemSeq})
	type pos struct {
		name      string
		index     int64
		enclosing string
		present   bool
	}
	of := func(ps []Position) []pos {
		var out []pos
		for _, p := range ps {
			out = append(out, pos{p.StepName, p.StepIndex, str(p.EnclosingStep), p.EnclosingStep != nil})
		}
		return out
	}
	require.Equal(t, []pos{{"a", 0, "", false}, {"a", 1, "", false}, {"a", 1, "", true}, {"b", 0, "", false}}, of(item.Completed))
	require.Equal(t, []pos{{"b", 0, "", false}}, of(item.Started))

	empty, err := Fold(evs[:1])
	require.NoError(t, err)
	require.NotNil(t, empty.Completed, "an item with no steps answers empty lists, not null")
	require.NotNil(t, empty.Trajectory)
}
