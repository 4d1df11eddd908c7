// What a rollout record must carry and what it gets when it does not (lance-context's rules),
// declared once for every path that writes rollouts — JSON and multipart rows, Arrow batches —
// and the columns its reads filter by and always show.
package kinds

import (
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RolloutRequired are the columns every rollout record must set.
var RolloutRequired = []string{"id", "rollout_id"}

// ColumnDefault is what an absent (or null) column of a record gets: another column's value
// (From), the request's time (Now), or a constant (Value, of the column's Go type: string or int32).
type ColumnDefault struct {
	Column string
	From   string
	Now    bool
	Value  any
}

// RolloutDefaults: problem_id = rollout_id, sequence_order 0, role "assistant", created_at the
// request's time, content_type "text/plain".
var RolloutDefaults = []ColumnDefault{
	{Column: "problem_id", From: "rollout_id"},
	{Column: "sequence_order", Value: int32(0)},
	{Column: "role", Value: "assistant"},
	{Column: "created_at", Now: true},
	{Column: "content_type", Value: "text/plain"},
}

// RolloutAlwaysPresent are the members a rollout record's JSON shows even when null (the
// defaulted ones: lance-context's DTO always has them).
var RolloutAlwaysPresent = map[string]bool{"problem_id": true, "sequence_order": true, "role": true, "created_at": true, "content_type": true}

// RolloutFilterColumns are the columns a rollout listing's JSON filter may name, with the JSON
// type each compares as (lance-context's list).
var RolloutFilterColumns = map[string]string{
	"rollout_id": "string", "problem_id": "string", "policy_version": "string", "role": "string",
	"artifact_type": "string", "include_in_training": "bool",
}

// JSON is the default's value as a JSON literal (now is the request's time); nil for From.
func (d ColumnDefault) JSON(now time.Time) []byte {
	switch {
	case d.From != "":
		return nil
	case d.Now:
		b, _ := json.Marshal(now.UTC().Format(time.RFC3339Nano))
		return b
	}
	b, _ := json.Marshal(d.Value)
	return b
}

// Array is n copies of the default's value as a column of type dt (now is the request's time);
// nil for From, and for a value that is not of dt's kind (a declaration error a test catches).
// The caller releases it.
func (d ColumnDefault) Array(dt arrow.DataType, n int, now time.Time, mem memory.Allocator) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	b.Reserve(n)
	switch {
	case d.From != "":
		return nil
	case d.Now:
		tb, ok := b.(*array.TimestampBuilder)
		if !ok {
			return nil
		}
		unit := dt.(*arrow.TimestampType).Unit
		ts, err := arrow.TimestampFromTime(now, unit)
		if err != nil {
			return nil
		}
		for range n {
			tb.Append(ts)
		}
	default:
		switch v := d.Value.(type) {
		case string:
			sb, ok := b.(*array.StringBuilder)
			if !ok {
				return nil
			}
			sb.ReserveData(n * len(v))
			for range n {
				sb.Append(v)
			}
		case int32:
			ib, ok := b.(*array.Int32Builder)
			if !ok {
				return nil
			}
			for range n {
				ib.Append(v)
			}
		default:
			return nil
		}
	}
	return b.NewArray()
}
