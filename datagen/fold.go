// The fold: an item's events, in item_seq order, replayed into its current state (FoldedItem),
// and the failure lens over the same events. Pure functions of the events: the read paths
// gather an item's events and call them.
package datagen

import (
	"cmp"
	"encoding/json"
	"slices"
)

// FoldedItem is an item's state (lance-context's FoldedDatagenItemDto).
type FoldedItem struct {
	ItemID       string                `json:"item_id"`
	RootItemID   string                `json:"root_item_id"`
	ParentItemID *string               `json:"parent_item_id,omitempty"`
	Status       string                `json:"status"` // running, completed or filtered: failures never end an item
	LastItemSeq  int64                 `json:"last_item_seq"`
	LastAttempt  int32                 `json:"last_attempt"`
	Fields       map[string]FieldState `json:"fields"`
	Trajectory   []StepCursor          `json:"trajectory"` // completed steps in item_seq order
	Started      []Position            `json:"started,omitempty"`
	Completed    []Position            `json:"completed,omitempty"`
	QueryTags    json.RawMessage       `json:"query_tags,omitempty"`
	BlobEventIDs map[string]string     `json:"blob_event_ids,omitempty"` // blob field -> the event holding it
}

// FieldState is a folded field: mode "set" holds the last value, "append" every value in order,
// with the field's codec (field_type, codec_version).
type FieldState struct {
	Mode         string  `json:"mode"`
	FieldType    *string `json:"field_type,omitempty"`
	CodecVersion *int32  `json:"codec_version,omitempty"`
	Value        *Value  `json:"value,omitempty"`
	Values       []Value `json:"values,omitempty"`
}

// Position is a place in an item's step tree.
type Position struct {
	StepName      string  `json:"step_name"`
	StepKind      string  `json:"step_kind"`
	StepIndex     int64   `json:"step_index"`
	EnclosingStep *string `json:"enclosing_step,omitempty"`
	SelectorStep  *string `json:"selector_step,omitempty"`
}

// StepCursor is one completed step: its position and the STEP_COMPLETED's item_seq.
type StepCursor struct {
	StepName      string  `json:"step_name"`
	StepKind      string  `json:"step_kind"`
	StepIndex     int64   `json:"step_index"`
	EnclosingStep *string `json:"enclosing_step,omitempty"`
	SelectorStep  *string `json:"selector_step,omitempty"`
	ItemSeq       int64   `json:"item_seq"`
}

// Failure is one FAILED event of an item (the failure lens).
type Failure struct {
	At        StepCursor `json:"at"`
	RunID     string     `json:"run_id"`
	Attempt   int32      `json:"attempt"`
	ErrorType string     `json:"error_type"`
	ErrorDump *string    `json:"error_dump,omitempty"`
	Traceback *string    `json:"traceback,omitempty"`
}

func positionOf(e *Event) Position {
	var idx int64
	if e.StepIndex != nil {
		idx = *e.StepIndex
	}
	return Position{StepName: str(e.StepName), StepKind: str(e.StepKind), StepIndex: idx, EnclosingStep: e.EnclosingStep, SelectorStep: e.SelectorStep}
}

func cursorOf(e *Event) StepCursor {
	p := positionOf(e)
	return StepCursor{StepName: p.StepName, StepKind: p.StepKind, StepIndex: p.StepIndex, EnclosingStep: p.EnclosingStep, SelectorStep: p.SelectorStep, ItemSeq: e.ItemSeq}
}

// ordered sorts one item's events by (item_seq, event_id) and refuses two events at one item_seq
// (a split-brain write) or events of more than one item.
func ordered(events []Event) ([]*Event, error) {
	out := make([]*Event, len(events))
	for i := range events {
		out[i] = &events[i]
	}
	slices.SortFunc(out, func(a, b *Event) int {
		return cmp.Or(cmp.Compare(a.ItemSeq, b.ItemSeq), cmp.Compare(a.EventID, b.EventID))
	})
	for i := 1; i < len(out); i++ {
		if out[i].ItemID != out[0].ItemID {
			return nil, invalidf("all events in a fold must belong to one item")
		}
		if out[i].ItemSeq == out[i-1].ItemSeq {
			return nil, invalidf("item '%s' has conflicting events at item_seq %d", out[i].ItemID, out[i].ItemSeq)
		}
	}
	return out, nil
}

// Fold replays one item's events (any order) into its state; nil when the item never started
// (its first event is not ITEM_CREATED). Blob values keep whatever bytes the events carry.
func Fold(events []Event) (*FoldedItem, error) {
	evs, err := ordered(events)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].EventType != ItemCreated {
		return nil, nil
	}
	first := evs[0]
	item := &FoldedItem{ItemID: first.ItemID, RootItemID: first.RootItemID, ParentItemID: first.ParentItemID,
		Status: StatusRunning, LastItemSeq: first.ItemSeq, LastAttempt: first.Attempt,
		Fields: map[string]FieldState{}}
	// Steps started and completed, with repeats: sorted and made distinct once at the end (a
	// set per fold cost more than the rest of the fold).
	steps := 0
	for _, e := range evs {
		if e.EventType == StepCompleted {
			steps++
		}
	}
	var started []Position
	completed := make([]Position, 0, steps)
	item.Trajectory = make([]StepCursor, 0, steps)
	for _, e := range evs {
		item.LastItemSeq = max(item.LastItemSeq, e.ItemSeq)
		item.LastAttempt = max(item.LastAttempt, e.Attempt)
		switch e.EventType {
		case ItemCreated:
			item.Status = StatusRunning
			if e.QueryTags != nil {
				item.QueryTags = e.QueryTags
			}
		case StepStarted:
			started = append(started, positionOf(e))
		case FieldSet, FieldAppend:
			name, v := str(e.FieldName), *e.Value
			if v.Kind == KindBlob {
				if item.BlobEventIDs == nil {
					item.BlobEventIDs = map[string]string{}
				}
				item.BlobEventIDs[name] = e.EventID
			}
			prev, exists := item.Fields[name]
			if e.EventType == FieldSet {
				if exists && prev.Mode != "set" {
					return nil, invalidf("field '%s' mixes FIELD_SET and FIELD_APPEND", name)
				}
				item.Fields[name] = FieldState{Mode: "set", FieldType: e.FieldType, CodecVersion: e.CodecVersion, Value: &v}
				continue
			}
			if !exists {
				item.Fields[name] = FieldState{Mode: "append", FieldType: e.FieldType, CodecVersion: e.CodecVersion, Values: []Value{v}}
				continue
			}
			if prev.Mode != "append" {
				return nil, invalidf("field '%s' mixes FIELD_SET and FIELD_APPEND", name)
			}
			if str(prev.FieldType) != str(e.FieldType) || *prev.CodecVersion != *e.CodecVersion || prev.Values[0].Kind != v.Kind {
				return nil, invalidf("field '%s' appends values of different codecs (%s v%d %s, then %s v%d %s)", name,
					str(prev.FieldType), *prev.CodecVersion, prev.Values[0].Kind, str(e.FieldType), *e.CodecVersion, v.Kind)
			}
			prev.Values = append(prev.Values, v)
			item.Fields[name] = prev
		case StepCompleted:
			completed = append(completed, positionOf(e))
			item.Trajectory = append(item.Trajectory, cursorOf(e))
		case Failed:
			// The failure lens only: a FAILED event leaves the item running.
		case Terminal:
			item.Status = str(e.Status)
		}
	}
	item.Started, item.Completed = distinctSorted(started), distinctSorted(completed)
	return item, nil
}

// distinctSorted orders positions by (step_name, step_index, enclosing, selector, step_kind),
// absent before present, and keeps one of each (in place; never nil).
func distinctSorted(ps []Position) []Position {
	optCmp := func(a, b *string) int {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		case b == nil:
			return 1
		}
		return cmp.Compare(*a, *b)
	}
	order := func(a, b Position) int {
		return cmp.Or(cmp.Compare(a.StepName, b.StepName), cmp.Compare(a.StepIndex, b.StepIndex),
			optCmp(a.EnclosingStep, b.EnclosingStep), optCmp(a.SelectorStep, b.SelectorStep), cmp.Compare(a.StepKind, b.StepKind))
	}
	slices.SortFunc(ps, order)
	ps = slices.CompactFunc(ps, func(a, b Position) bool { return order(a, b) == 0 })
	if ps == nil {
		return []Position{}
	}
	return ps
}

// Failures lists one item's FAILED events in item_seq order.
func Failures(events []Event) ([]Failure, error) {
	evs, err := ordered(events)
	if err != nil {
		return nil, err
	}
	out := []Failure{}
	for _, e := range evs {
		if e.EventType == Failed {
			out = append(out, Failure{At: cursorOf(e), RunID: e.RunID, Attempt: e.Attempt, ErrorType: str(e.ErrorType),
				ErrorDump: e.ErrorDump, Traceback: e.Traceback})
		}
	}
	return out, nil
}
