// The event model: one row of the checkpoint log, its wire form (lance-context's DatagenEventDto
// field names), its streamed decoding and the rules every event must meet on its own (batch.go
// holds the rules of a batch).
package datagen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// SchemaVersion is the checkpoint-log schema version lance-context writes today.
const SchemaVersion = 2

// MaxInlineBlobBytes bounds one blob value carried inline in an event (the request body limit
// bounds the batch).
const MaxInlineBlobBytes = 64 << 20

// ErrInvalid marks an event, batch or stored history that breaks the log's rules (a 400).
var ErrInvalid = errors.New("invalid datagen events")

// ErrTooLarge marks a blob value over MaxInlineBlobBytes (a 413).
var ErrTooLarge = errors.New("datagen blob too large")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Event types.
const (
	ItemCreated   = "ITEM_CREATED"
	StepStarted   = "STEP_STARTED"
	FieldSet      = "FIELD_SET"
	FieldAppend   = "FIELD_APPEND"
	StepCompleted = "STEP_COMPLETED"
	Failed        = "FAILED"
	Terminal      = "TERMINAL"
)

var eventTypes = map[string]bool{ItemCreated: true, StepStarted: true, FieldSet: true, FieldAppend: true,
	StepCompleted: true, Failed: true, Terminal: true}

var stepKinds = map[string]bool{"root": true, "leaf": true, "sequence": true, "loop": true, "map_reduce": true,
	"branch": true, "sub_pipeline": true, "conditional": true, "router": true}

// Item statuses: the lifecycle lens (running, completed, filtered) and the failure lens (failed).
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFiltered  = "filtered"
	StatusFailed    = "failed"
)

var statuses = map[string]bool{StatusRunning: true, StatusCompleted: true, StatusFiltered: true, StatusFailed: true}

// Value kinds.
const (
	KindInt   = "int"
	KindFloat = "float"
	KindBool  = "bool"
	KindStr   = "str"
	KindJSON  = "json"
	KindBlob  = "blob"
)

// Event is one checkpoint-log row in its wire form.
type Event struct {
	EventID       string          `json:"event_id"`
	ItemID        string          `json:"item_id"`
	RootItemID    string          `json:"root_item_id"`
	ParentItemID  *string         `json:"parent_item_id,omitempty"`
	ItemSeq       int64           `json:"item_seq"`
	CheckpointID  string          `json:"checkpoint_id"`
	EventType     string          `json:"event_type"`
	StepName      *string         `json:"step_name,omitempty"`
	StepKind      *string         `json:"step_kind,omitempty"`
	StepIndex     *int64          `json:"step_index,omitempty"`
	EnclosingStep *string         `json:"enclosing_step,omitempty"`
	SelectorStep  *string         `json:"selector_step,omitempty"`
	Attempt       int32           `json:"attempt"`
	RunID         string          `json:"run_id"`
	WriterEpoch   string          `json:"writer_epoch"`
	FieldName     *string         `json:"field_name,omitempty"`
	FieldType     *string         `json:"field_type,omitempty"`
	CodecVersion  *int32          `json:"codec_version,omitempty"`
	Value         *Value          `json:"value,omitempty"`
	QueryTags     json.RawMessage `json:"query_tags,omitempty"`
	Status        *string         `json:"status,omitempty"`
	ErrorType     *string         `json:"error_type,omitempty"`
	ErrorDump     *string         `json:"error_dump,omitempty"`
	Traceback     *string         `json:"traceback,omitempty"`
	EventTS       *time.Time      `json:"event_ts,omitempty"` // the server's time when omitted
	SchemaVersion int32           `json:"schema_version"`
}

// Value is a FIELD_SET/FIELD_APPEND value: int, float, bool, str and json carry a JSON value in
// Value; blob carries its bytes (base64 in JSON) with size and checksum.
type Value struct {
	Kind     string          `json:"kind"`
	Value    json.RawMessage `json:"value,omitempty"`
	Bytes    []byte          `json:"bytes,omitempty"`
	Size     *int64          `json:"size,omitempty"`
	Checksum *string         `json:"checksum,omitempty"`
}

// wireEvent is an event as a request carries it: item_seq and schema_version have no default in
// lance-context, so a missing one is an error, not 0 (these fields win over Event's: they are
// shallower).
type wireEvent struct {
	Event
	ItemSeq       *int64 `json:"item_seq"`
	SchemaVersion *int32 `json:"schema_version"`
}

// Bounds on one append: MaxEventsPerAppend events, each at most MaxEventBytes of JSON (an
// inline blob at its largest, base64, and the event around it).
const (
	MaxEventsPerAppend = 100_000
	MaxEventBytes      = MaxInlineBlobBytes/3*4 + 1<<20
)

// decodeEvents decodes an append body, {"events": [...]}, as it arrives from r, handing each
// event to visit (with its index and the body bytes read so far) before the next is read: each
// checked for its required members and its size as soon as it is read, the count bounded by
// MaxEventsPerAppend, so what a body costs follows its valid events and an invalid one ends the
// decoding where it stands; visit must not keep ev past its call. A JSON null for an
// optional member is absent. Errors reading r are returned as they are (the caller maps a stalled
// or oversized body); bad input is ErrInvalid, an event or a count past its bound ErrTooLarge.
// It returns the number of events.
func decodeEvents(r io.Reader, visit func(i int, ev *Event, read int64) error) (int, error) {
	dec := jsontext.NewDecoder(r)
	readErr := func(err error, what string) error {
		var syntax *jsontext.SyntacticError
		var semantic *jsonv2.SemanticError
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return invalidf("invalid events body: unexpected end of input in %s", what)
		case errors.As(err, &semantic) || errors.As(err, &syntax):
			return invalidf("invalid events body: %s: %v", what, err)
		}
		return err // the body's own error (stalled, too large, refused by a budget)
	}
	delim := func(want jsontext.Kind, what string) error {
		tok, err := dec.ReadToken()
		if err != nil {
			return readErr(err, what)
		}
		if tok.Kind() != want {
			return invalidf("invalid events body: expected %q at %s", want.String(), what)
		}
		return nil
	}
	if err := delim('{', "the start of the body"); err != nil {
		return 0, err
	}
	total := 0
	seen := false
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return 0, readErr(err, "a member name")
		}
		if tok.Kind() == '}' {
			break
		}
		if key := tok.String(); key != "events" {
			if err := dec.SkipValue(); err != nil { // another member: ignored, as lance-context does
				return 0, readErr(err, "member "+key)
			}
			continue
		}
		if seen {
			return 0, invalidf("invalid events body: \"events\" appears twice")
		}
		seen = true
		tok, err = dec.ReadToken()
		if err != nil {
			return 0, readErr(err, "events")
		}
		switch tok.Kind() {
		case 'n':
			continue // "events": null
		case '[':
		default:
			return 0, invalidf("invalid events body: events must be an array")
		}
		var w wireEvent // one, reused: decoding into a fresh one per event doubles what an append allocates
		for i := 0; ; i++ {
			if dec.PeekKind() == ']' {
				break
			}
			if i >= MaxEventsPerAppend {
				return 0, fmt.Errorf("%w: an append holds at most %d events", ErrTooLarge, MaxEventsPerAppend)
			}
			start := dec.InputOffset()
			w = wireEvent{}
			if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
				return 0, readErr(err, fmt.Sprintf("event %d", i))
			}
			if dec.InputOffset()-start > MaxEventBytes {
				return 0, fmt.Errorf("%w: event %d is over %d bytes", ErrTooLarge, i, MaxEventBytes)
			}
			ev, err := w.event(i)
			if err != nil {
				return 0, err
			}
			if err := visit(i, &ev, dec.InputOffset()); err != nil {
				return 0, err
			}
			total++
		}
		if err := delim(']', "the end of events"); err != nil {
			return 0, err
		}
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		if err != nil {
			return 0, readErr(err, "the end of the body")
		}
		return 0, invalidf("invalid events body: trailing data after the object")
	}
	return total, nil
}

// event checks what a request must carry and returns the event (i is its index, for messages).
func (w *wireEvent) event(i int) (Event, error) {
	if w.ItemSeq == nil {
		return Event{}, invalidf("event %d: missing field `item_seq`", i)
	}
	if w.SchemaVersion == nil {
		return Event{}, invalidf("event %d: missing field `schema_version`", i)
	}
	ev := w.Event
	ev.ItemSeq, ev.SchemaVersion = *w.ItemSeq, *w.SchemaVersion
	if isNull(ev.QueryTags) {
		ev.QueryTags = nil
	}
	return ev, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" }

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Validate checks one event on its own (lance-context's rules, plus the ones its key needs).
func (e *Event) Validate() error {
	for _, f := range []struct{ name, value string }{{"event_id", e.EventID}, {"item_id", e.ItemID}, {"root_item_id", e.RootItemID},
		{"checkpoint_id", e.CheckpointID}, {"run_id", e.RunID}, {"writer_epoch", e.WriterEpoch}} {
		if f.value == "" {
			return invalidf("%s must not be empty", f.name)
		}
	}
	// The log's key is item_id NUL event_id: an item id never holds a NUL (checkpoint ids may:
	// lance-context's own writers put one in the ITEM_CREATED checkpoint id).
	if strings.IndexByte(e.ItemID, 0) >= 0 {
		return invalidf("item_id must not contain a NUL character")
	}
	id, err := ParseItemID(e.ItemID)
	if err != nil {
		return invalidf("%s", err)
	}
	if e.RootItemID != id.Root {
		return invalidf("root_item_id '%s' is not the root of item_id '%s' (want '%s')", e.RootItemID, e.ItemID, id.Root)
	}
	if e.ParentItemID != nil {
		if _, err := ParseItemID(*e.ParentItemID); err != nil {
			return invalidf("parent_item_id: %s", err)
		}
	}
	if e.ItemSeq < 0 {
		return invalidf("item_seq must be non-negative")
	}
	if e.Attempt < 0 {
		return invalidf("attempt must be non-negative")
	}
	if e.SchemaVersion <= 0 {
		return invalidf("schema_version must be positive")
	}
	if !eventTypes[e.EventType] {
		return invalidf("unsupported datagen event type '%s'", e.EventType)
	}
	if e.StepKind != nil && !stepKinds[*e.StepKind] {
		return invalidf("unsupported datagen step kind '%s'", *e.StepKind)
	}
	if e.Status != nil && !statuses[*e.Status] {
		return invalidf("unsupported datagen status '%s'", *e.Status)
	}
	if e.Value != nil {
		if err := e.Value.validate(); err != nil {
			return err
		}
	}
	switch e.EventType {
	case FieldSet, FieldAppend:
		switch {
		case str(e.FieldName) == "":
			return invalidf("field events require field_name")
		case str(e.FieldType) == "":
			return invalidf("field events require field_type")
		case e.CodecVersion == nil:
			return invalidf("field events require codec_version")
		case e.Value == nil:
			return invalidf("field events require a value")
		}
		return e.requireStep("field events")
	case StepStarted, StepCompleted:
		return e.requireStep(e.EventType)
	case Failed:
		if str(e.ErrorType) == "" {
			return invalidf("FAILED requires error_type")
		}
		return e.requireStep("FAILED")
	case Terminal:
		if s := str(e.Status); s != StatusCompleted && s != StatusFiltered {
			return invalidf("TERMINAL requires status completed or filtered")
		}
	}
	return nil
}

func (e *Event) requireStep(what string) error {
	switch {
	case str(e.StepName) == "":
		return invalidf("%s require step_name", what)
	case e.StepKind == nil:
		return invalidf("%s require step_kind", what)
	case e.StepIndex == nil:
		return invalidf("%s require step_index", what)
	}
	return nil
}

// validate checks a value's kind against its payload (the write path: a blob carries its bytes).
func (v *Value) validate() error {
	missing := func() error { return invalidf("datagen value of kind '%s' is missing 'value'", v.Kind) }
	var x any
	if v.Kind != KindBlob {
		if isNull(v.Value) {
			return missing()
		}
		var err error
		if x, err = decodeScalar(v.Value); err != nil {
			return invalidf("datagen value: %v", err)
		}
	}
	switch v.Kind {
	case KindInt:
		n, ok := x.(json.Number)
		if _, err := n.Int64(); !ok || err != nil {
			return invalidf("datagen value of kind 'int' needs an integer that fits in 64 bits, got %s", v.Value)
		}
	case KindFloat:
		n, ok := x.(json.Number)
		if _, err := n.Float64(); !ok || err != nil {
			return invalidf("datagen value of kind 'float' needs a number, got %s", v.Value)
		}
	case KindBool:
		if _, ok := x.(bool); !ok {
			return invalidf("datagen value of kind 'bool' needs true or false, got %s", v.Value)
		}
	case KindStr:
		if _, ok := x.(string); !ok {
			return invalidf("datagen value of kind 'str' needs a string, got %s", v.Value)
		}
	case KindJSON:
	case KindBlob:
		if v.Bytes == nil {
			return invalidf("blob values need their bytes on the write path")
		}
		if len(v.Bytes) > MaxInlineBlobBytes {
			return fmt.Errorf("%w: a blob value holds %d bytes; at most %d are stored inline", ErrTooLarge, len(v.Bytes), MaxInlineBlobBytes)
		}
		if v.Size == nil {
			n := int64(len(v.Bytes))
			v.Size = &n
		} else if *v.Size != int64(len(v.Bytes)) {
			return invalidf("blob value declares %d bytes but contains %d", *v.Size, len(v.Bytes))
		}
	default:
		return invalidf("unsupported datagen value kind '%s'", v.Kind)
	}
	return nil
}

// decodeScalar decodes one JSON value (syntax already checked): strings, numbers (as
// json.Number) and true/false directly, without a decoder — appends decode each value twice,
// to validate it and to build its column; anything else through encoding/json.
func decodeScalar(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
		return json.Number(raw), nil
	case len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0:
		return string(raw[1 : len(raw)-1]), nil // no escapes: the text is the string (UTF-8 checked with the body)
	case len(raw) > 0 && raw[0] == '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case string(raw) == "true":
		return true, nil
	case string(raw) == "false":
		return false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	err := dec.Decode(&x)
	return x, err
}
