// An append's events as the record the log writes, and the rules a batch must meet: built from
// a JSON body as it arrives (DecodeBatch: each event checked and appended as a row, no event
// kept) or from events in memory (NewBatch), then checked as a whole on that record (event ids
// reused only for the same content, one item_seq per item, a checkpoint's shape).
package datagen

import (
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Batch is an append's events, each valid on its own, as rows of kinds.DatagenSchema. The caller
// releases it.
type Batch struct {
	rec arrow.RecordBatch
	// the columns the batch rules read
	eventID, itemID, checkpoint, runID, epoch, etype *array.String
	stepName, stepKind, enclosing, selector          *array.String
	seq, stepIndex                                   *array.Int64
	attempt                                          *array.Int32
}

func newBatch(rec arrow.RecordBatch) *Batch {
	s := func(name string) *array.String { return rec.Column(col[name]).(*array.String) }
	return &Batch{rec: rec, eventID: s("event_id"), itemID: s("item_id"), checkpoint: s("checkpoint_id"),
		runID: s("run_id"), epoch: s("writer_epoch"), etype: s("event_type"),
		stepName: s("step_name"), stepKind: s("step_kind"), enclosing: s("enclosing_step"), selector: s("selector_step"),
		seq: rec.Column(col["item_seq"]).(*array.Int64), stepIndex: rec.Column(col["step_index"]).(*array.Int64),
		attempt: rec.Column(col["attempt"]).(*array.Int32)}
}

// NewBatch checks each event and builds its rows (events without event_ts get now).
func NewBatch(events []Event, now time.Time, mem memory.Allocator) (*Batch, error) {
	if len(events) == 0 {
		return nil, invalidf("events array must not be empty")
	}
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return nil, eventError(i, err)
		}
	}
	return newBatch(ToRecord(events, now, mem)), nil
}

// DecodeBatch decodes an append body as it arrives from r (see decodeEvents): each event is
// checked and appended as a row as soon as it is read, so no decoded event outlives its row.
// declared is the body's length when known (-1 otherwise): once half of it has been read, the
// columns are sized for the whole from the rows so far (one copy instead of a trail of them).
func DecodeBatch(r io.Reader, declared int64, now time.Time, mem memory.Allocator) (*Batch, error) {
	b := newRecordBuilder(mem, now)
	defer b.release()
	// Room for the first rows: about as many as the body can hold, at most eventChunk; more are
	// made as rows arrive (this only sizes the start).
	first := eventChunk
	if declared > 0 {
		first = int(min(int64(eventChunk), declared/minEventBytes+1))
	}
	b.size(first)
	sized := declared <= 0
	n, err := decodeEvents(r, func(i int, ev *Event, read int64) error {
		if err := ev.Validate(); err != nil {
			return eventError(i, err)
		}
		b.add(ev)
		if !sized && read >= declared/2 {
			sized = true
			rows := int64(b.rows())
			b.expect(int(min(int64(MaxEventsPerAppend), rows*declared/max(read, 1)+1)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalidf("events array must not be empty")
	}
	return newBatch(b.finish()), nil
}

// eventChunk is how many rows a decoded batch has room for before its length is known;
// minEventBytes is about the least JSON a valid event takes (its required members alone).
const (
	eventChunk    = 1024
	minEventBytes = 128
)

func eventError(i int, err error) error { return fmt.Errorf("event %d: %w", i, err) }

// Record is the batch's rows (owned by the batch).
func (b *Batch) Record() arrow.RecordBatch { return b.rec }

// Len is the number of events.
func (b *Batch) Len() int { return int(b.rec.NumRows()) }

// Release releases the batch's record.
func (b *Batch) Release() { b.rec.Release() }

// Validate checks the batch's rules: for a raw append (checkpoint false), no event id reused
// with different content and no item_seq used twice for one item; for a checkpoint, also one
// item, checkpoint, run, writer epoch and attempt, only field events and exactly one
// STEP_COMPLETED, every field event at the completion's step.
func (b *Batch) Validate(checkpoint bool) error {
	if checkpoint {
		if err := b.validateCheckpoint(); err != nil {
			return err
		}
	}
	n := b.Len()
	byID := make(map[string]int32, n)
	type itemSeq struct {
		item string
		seq  int64
	}
	seqs := make(map[itemSeq]int32, n)
	for i := range n {
		id := b.eventID.Value(i)
		if prev, ok := byID[id]; ok && !b.sameContent(int(prev), i) {
			return invalidf("event_id '%s' was reused with different content", id)
		}
		byID[id] = int32(i)
		k := itemSeq{b.itemID.Value(i), b.seq.Value(i)}
		if prev, ok := seqs[k]; ok && b.eventID.Value(int(prev)) != id {
			return invalidf("item '%s' has duplicate item_seq %d in one batch", k.item, k.seq)
		}
		seqs[k] = int32(i)
	}
	return nil
}

// sameContent reports whether rows i and j (one event id) carry the same content, event_ts
// aside: a retry is stamped anew when the client leaves it to the server.
func (b *Batch) sameContent(i, j int) bool {
	ts := col["event_ts"]
	for c, a := range b.rec.Columns() {
		if c != ts && !array.SliceEqual(a, int64(i), int64(i+1), a, int64(j), int64(j+1)) {
			return false
		}
	}
	return true
}

func (b *Batch) validateCheckpoint() error {
	completion := -1
	for i := range b.Len() {
		if b.itemID.Value(i) != b.itemID.Value(0) || b.checkpoint.Value(i) != b.checkpoint.Value(0) || b.runID.Value(i) != b.runID.Value(0) ||
			b.epoch.Value(i) != b.epoch.Value(0) || b.attempt.Value(i) != b.attempt.Value(0) {
			return invalidf("checkpoint batch must share item_id, checkpoint_id, run_id, writer_epoch, and attempt")
		}
		switch b.etype.Value(i) {
		case FieldSet, FieldAppend:
		case StepCompleted:
			if completion >= 0 {
				return invalidf("checkpoint batch requires exactly one STEP_COMPLETED event, found more")
			}
			completion = i
		default:
			return invalidf("checkpoint batch may contain only FIELD_SET, FIELD_APPEND, and STEP_COMPLETED events")
		}
	}
	if completion < 0 {
		return invalidf("checkpoint batch requires exactly one STEP_COMPLETED event, found 0")
	}
	for i := range b.Len() {
		if i != completion && !b.sameStep(i, completion) {
			return invalidf("all field events must share the STEP_COMPLETED step identity")
		}
	}
	return nil
}

// sameStep reports whether rows i and j name one step: step_name and step_kind (absent as
// empty), step_index, enclosing_step and selector_step (absent distinct from empty).
func (b *Batch) sameStep(i, j int) bool {
	for _, a := range []arrow.Array{b.stepIndex, b.enclosing, b.selector} {
		if !array.SliceEqual(a, int64(i), int64(i+1), a, int64(j), int64(j+1)) {
			return false
		}
	}
	return b.stepName.Value(i) == b.stepName.Value(j) && b.stepKind.Value(i) == b.stepKind.Value(j)
}
