package datagen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stretchr/testify/require"
)

// The event id is lance-context's: UUIDv5 (OID namespace) of "item NUL checkpoint NUL ordinal"
// (expected values from Python's uuid.uuid5).
func TestEventIDIsLanceContextsDerivation(t *testing.T) {
	require.Equal(t, "8dc2c1ce-0521-516a-b939-4f505d693555", EventID("5", "created", 0))
	require.Equal(t, "2b2ad3e9-c409-5e65-ad95-8860f8766f8c", EventID("5/expand:0", "solve-0", 1))
}

func TestItemIDsRoundTrip(t *testing.T) {
	id, err := ParseItemID("5/expand:0/enrich:1")
	require.NoError(t, err)
	require.Equal(t, ItemID{Root: "5", Segments: []Segment{{"expand", 0}, {"enrich", 1}}}, id)
	require.Equal(t, "5/expand:0/enrich:1", id.String())
	for _, bad := range []string{"", "/x:1", "5/expand", "5/expand:x"} {
		_, err := ParseItemID(bad)
		require.Error(t, err, bad)
	}
}

func decodeEvent(t *testing.T, doc string) Event {
	t.Helper()
	evs, err := decodeAll([]byte(`{"events":[` + doc + `]}`))
	require.NoError(t, err)
	return evs[0]
}

func TestEventValidationNamesTheRule(t *testing.T) {
	base := `"event_id":"e","item_id":"5","root_item_id":"5","item_seq":1,"checkpoint_id":"c","run_id":"r","writer_epoch":"w","schema_version":2`
	step := `,"step_name":"gen","step_kind":"leaf","step_index":0`
	field := `,"field_name":"f","field_type":"str","codec_version":1`
	for _, c := range []struct{ doc, want string }{
		{`{` + base + `,"event_type":"NOPE"}`, "unsupported datagen event type"},
		{`{` + base + `,"event_type":"FIELD_SET"` + step + field + `}`, "field events require a value"},
		{`{` + base + `,"event_type":"FIELD_SET"` + field + `,"value":{"kind":"str","value":"x"}}`, "require step_name"},
		{`{` + base + `,"event_type":"FIELD_SET"` + step + field + `,"value":{"kind":"int","value":1.5}}`, "kind 'int' needs an integer"},
		{`{` + base + `,"event_type":"FIELD_SET"` + step + field + `,"value":{"kind":"str","value":null}}`, "missing 'value'"},
		{`{` + base + `,"event_type":"FIELD_SET"` + step + field + `,"value":{"kind":"blob","bytes":"AAE=","size":5}}`, "declares 5 bytes but contains 2"},
		{`{` + base + `,"event_type":"FIELD_SET"` + step + field + `,"value":{"kind":"blob","size":5}}`, "need their bytes"},
		{`{` + base + `,"event_type":"FIELD_SET"` + step + field + `,"value":{"kind":"vec","value":1}}`, "unsupported datagen value kind"},
		{`{` + base + `,"event_type":"FAILED"` + step + `}`, "FAILED requires error_type"},
		{`{` + base + `,"event_type":"TERMINAL","status":"running"}`, "TERMINAL requires status completed or filtered"},
		{`{` + base + `,"event_type":"STEP_COMPLETED","step_name":"gen","step_kind":"weird","step_index":0}`, "unsupported datagen step kind"},
		{`{"event_id":"e","item_id":"5/x:1","root_item_id":"6","item_seq":1,"checkpoint_id":"c","run_id":"r","writer_epoch":"w","schema_version":2,"event_type":"ITEM_CREATED"}`, "is not the root"},
		{`{"event_id":"e","item_id":"5\u0000","root_item_id":"5","item_seq":1,"checkpoint_id":"c","run_id":"r","writer_epoch":"w","schema_version":2,"event_type":"ITEM_CREATED"}`, "NUL"},
		{`{"event_id":"e","item_id":"5","root_item_id":"5","item_seq":-1,"checkpoint_id":"c","run_id":"r","writer_epoch":"w","schema_version":2,"event_type":"ITEM_CREATED"}`, "item_seq must be non-negative"},
		{`{"event_id":"e","item_id":"5","root_item_id":"5","item_seq":1,"checkpoint_id":"","run_id":"r","writer_epoch":"w","schema_version":2,"event_type":"ITEM_CREATED"}`, "checkpoint_id must not be empty"},
	} {
		e := decodeEvent(t, c.doc)
		err := e.Validate()
		require.ErrorIs(t, err, ErrInvalid, c.doc)
		require.Contains(t, err.Error(), c.want, c.doc)
	}
	_, err := decodeAll([]byte(`{"events":[{"event_id":"e","item_id":"5","root_item_id":"5","checkpoint_id":"c","run_id":"r","writer_epoch":"w","schema_version":2,"event_type":"ITEM_CREATED"}]}`))
	require.ErrorContains(t, err, "missing field `item_seq`")
	_, err = decodeAll([]byte(`{"events":[{"event_id":"e","item_id":"5","root_item_id":"5","item_seq":0,"checkpoint_id":"c","run_id":"r","writer_epoch":"w","event_type":"ITEM_CREATED"}]}`))
	require.ErrorContains(t, err, "missing field `schema_version`")
	big := decodeEvent(t, `{`+base+`,"event_type":"FIELD_SET"`+step+field+`,"value":{"kind":"blob","bytes":""}}`)
	big.Value.Bytes = make([]byte, MaxInlineBlobBytes+1)
	require.True(t, errors.Is(big.Validate(), ErrTooLarge))
}

func TestCheckpointBatchRules(t *testing.T) {
	ev := func(seq int64, typ, step string) Event {
		e := decodeEvent(t, `{"event_id":"x","item_id":"5","root_item_id":"5","item_seq":0,"checkpoint_id":"c1","run_id":"r","writer_epoch":"w","schema_version":2,"event_type":"ITEM_CREATED"}`)
		e.ItemSeq, e.EventType, e.EventID = seq, typ, EventID("5", "c1", uint32(seq))
		kind, idx := "leaf", int64(0)
		e.StepName, e.StepKind, e.StepIndex = &step, &kind, &idx
		if typ == FieldSet {
			name, ft, cv := "f", "str", int32(1)
			e.FieldName, e.FieldType, e.CodecVersion = &name, &ft, &cv
			e.Value = &Value{Kind: KindStr, Value: json.RawMessage(`"v"`)}
		}
		return e
	}
	require.NoError(t, validateBatch(t, true, []Event{ev(1, FieldSet, "gen"), ev(2, StepCompleted, "gen")}))
	require.ErrorContains(t, validateBatch(t, true, []Event{ev(1, FieldSet, "gen")}), "exactly one STEP_COMPLETED")
	require.ErrorContains(t, validateBatch(t, true, []Event{ev(1, StepCompleted, "gen"), ev(2, StepCompleted, "gen")}), "exactly one STEP_COMPLETED")
	require.ErrorContains(t, validateBatch(t, true, []Event{ev(1, FieldSet, "other"), ev(2, StepCompleted, "gen")}), "share the STEP_COMPLETED step identity")
	other := ev(1, FieldSet, "gen")
	other.WriterEpoch = "w2"
	require.ErrorContains(t, validateBatch(t, true, []Event{other, ev(2, StepCompleted, "gen")}), "must share item_id")
	created := ev(0, ItemCreated, "gen")
	require.ErrorContains(t, validateBatch(t, true, []Event{created, ev(2, StepCompleted, "gen")}), "only FIELD_SET")
	dup := ev(2, FieldSet, "gen")
	dup.EventID = "other"
	require.ErrorContains(t, validateBatch(t, false, []Event{ev(2, FieldSet, "gen"), dup}), "duplicate item_seq")
	changed := ev(1, FieldSet, "gen")
	changed.Value = &Value{Kind: KindStr, Value: json.RawMessage(`"w"`)}
	require.ErrorContains(t, validateBatch(t, false, []Event{ev(1, FieldSet, "gen"), changed}), "reused with different content")
	// Content is compared as stored: a retry whose JSON value is laid out differently is the same
	// event (and a different event_ts is a retry stamped anew).
	spaced := ev(1, FieldSet, "gen")
	spaced.Value = &Value{Kind: KindJSON, Value: json.RawMessage(`{"a": [1, 2]}`)}
	tight := ev(1, FieldSet, "gen")
	tight.Value = &Value{Kind: KindJSON, Value: json.RawMessage(`{"a":[1,2]}`)}
	later := time.Now().Add(time.Hour)
	tight.EventTS = &later
	require.NoError(t, validateBatch(t, false, []Event{spaced, tight}))
	_, err := NewBatch(nil, time.Now(), memory.DefaultAllocator)
	require.ErrorContains(t, err, "must not be empty")
}

// The streamed decoder builds the same batch whether or not it knows the body's length (sized
// at half of it, or grown as rows arrive), across many sizings; bad bodies are ErrInvalid.
func TestDecodeBatchAgreesWithAndWithoutALength(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"other": [1, {"x": 2}], "events":[`)
	for i := range 3*eventChunk + 7 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"event_id":"e%d","item_id":"i%d","root_item_id":"i%d","item_seq":%d,"checkpoint_id":"c","run_id":"r","writer_epoch":"w","event_type":"STEP_STARTED","step_name":"%s","step_kind":"leaf","step_index":0,"schema_version":2}`,
			i, i%10, i%10, i, strings.Repeat("s", 1+i%50))
	}
	b.WriteString(`]}`)
	body := b.String()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	now := time.Now()
	want, err := DecodeBatch(strings.NewReader(body), -1, now, mem)
	require.NoError(t, err)
	defer want.Release()
	require.Equal(t, 3*eventChunk+7, want.Len())
	for _, declared := range []int64{int64(len(body)), int64(len(body)) * 4, int64(len(body)) / 4} {
		got, err := DecodeBatch(strings.NewReader(body), declared, now, mem)
		require.NoError(t, err)
		require.True(t, array.RecordEqual(want.Record(), got.Record()), "declared %d", declared)
		got.Release()
	}
	evs, err := decodeAll([]byte(body))
	require.NoError(t, err)
	fromEvents, err := NewBatch(evs, now, mem)
	require.NoError(t, err)
	require.True(t, array.RecordEqual(want.Record(), fromEvents.Record()))
	fromEvents.Release()
	for _, bad := range []string{`{"events": [1]}`, `{"events": {}}`, `{"events": [], "events": []}`, `{"events": []} x`, `[`, `{"events": [{"event_id": "e"`, `{"events": []}`} {
		_, err := DecodeBatch(strings.NewReader(bad), int64(len(bad)), now, mem)
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}

// validateBatch checks events as an append would (each event, then the batch's rules).
func validateBatch(t *testing.T, checkpoint bool, events []Event) error {
	t.Helper()
	b, err := NewBatch(events, time.Now(), memory.DefaultAllocator)
	if err != nil {
		return err
	}
	defer b.Release()
	return b.Validate(checkpoint)
}

// decodeAll decodes an append body held in memory into its events as sent (not validated).
func decodeAll(body []byte) ([]Event, error) {
	var out []Event
	_, err := decodeEvents(bytes.NewReader(body), func(_ int, ev *Event, _ int64) error {
		out = append(out, *ev)
		return nil
	})
	return out, err
}
