// Encodings of the MemWAL's objects. WAL entries are Arrow IPC streams (one per group commit).
// A generation is its key file: its keys in order with _seq, tombstone flag and where the row
// lives — (entry, row) in the WAL entries the generation references (format 2), or the row of
// the same index in a separate Arrow IPC file (format 1, written by earlier releases and still
// read), so reads resolve a key without touching any row data.
package shard

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/table"
)

// gatherEntry encodes a WAL entry: rec as one IPC stream, without its nullable columns that are
// null in every row (a wide schema's unused columns would otherwise be written as zeroed buffers,
// about a sixth of a typical rollout row); decodeEntry restores them as nulls. rec's large column
// buffers are referenced, not copied (entrydata.go): rec must stay retained until the entry has
// been written, and the caller releases the entry then.
func gatherEntry(rec arrow.RecordBatch, mem memory.Allocator) (*entryData, error) {
	var fields []arrow.Field
	var cols []arrow.Array
	small := 1 << 12
	for i, c := range rec.Columns() {
		f := rec.Schema().Field(i)
		if f.Nullable && c.NullN() == c.Len() {
			continue
		}
		fields, cols = append(fields, f), append(cols, c)
		small += smallBufferBytes(c.Data()) + 1<<8
	}
	kept := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer kept.Release()
	g := newGatherWriter(kept, small)
	w := ipc.NewWriter(g, ipc.WithSchema(kept.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(kept); err != nil {
		_ = w.Close()
		g.finish().release()
		return nil, err
	}
	if err := w.Close(); err != nil {
		g.finish().release()
		return nil, err
	}
	return g.finish(), nil
}

// smallBufferBytes is what encoding d copies: its buffers (children and dictionary included)
// smaller than minReferencedPiece.
func smallBufferBytes(d arrow.ArrayData) int {
	n := 0
	for _, b := range d.Buffers() {
		if b != nil && b.Len() < minReferencedPiece {
			n += b.Len() + 8
		}
	}
	for _, c := range d.Children() {
		n += smallBufferBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY && d.Dictionary() != nil {
		n += smallBufferBytes(d.Dictionary())
	}
	return n
}

// encodeEntry is gatherEntry as one new slice (fences, tests).
func encodeEntry(rec arrow.RecordBatch, mem memory.Allocator) ([]byte, error) {
	e, err := gatherEntry(rec, mem)
	if err != nil {
		return nil, err
	}
	defer e.release()
	out := make([]byte, 0, e.size)
	for _, p := range e.pieces {
		out = append(out, p...)
	}
	return out, nil
}

// Arrow IPC stream framing (the columnar format's "encapsulated message"): a continuation marker
// 0xFFFFFFFF, the metadata length (int32, a multiple of 8), a flatbuffer Message, then
// Message.bodyLength body bytes; the stream ends with the marker and a zero length.
var ipcEOS = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}

// Message header types and field slots of the IPC Message flatbuffer (format/Message.fbs).
const (
	ipcHeaderSchema      = 1
	ipcHeaderRecordBatch = 3
	ipcSlotHeaderType    = 1
	ipcSlotBodyLength    = 3
)

// ipcMessage returns the type and total length (framing, metadata and body) of the message at
// the start of data; ok is false when data does not start with a whole message.
func ipcMessage(data []byte) (kind byte, length int, ok bool) { return ipcMessageIn(data, len(data)) }

// ipcMessageIn is ipcMessage for a message of which data holds at least the framing and the
// metadata, with avail bytes (data's and those after it) from its start.
func ipcMessageIn(data []byte, avail int) (kind byte, length int, ok bool) {
	if len(data) < 8 || binary.LittleEndian.Uint32(data) != 0xFFFFFFFF {
		return 0, 0, false
	}
	metaLen := int(int32(binary.LittleEndian.Uint32(data[4:])))
	if metaLen < 8 || 8+metaLen > len(data) {
		return 0, 0, false
	}
	meta := data[8 : 8+metaLen]
	t := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	if int(t.Pos)+4 > len(meta) {
		return 0, 0, false
	}
	vtable := int(t.Pos) - int(flatbuffers.GetSOffsetT(meta[t.Pos:]))
	if vtable < 0 || vtable+4 > len(meta) {
		return 0, 0, false
	}
	// field is the position in meta of the field in slot, or -1 when absent or out of bounds.
	field := func(slot, size int) int {
		vo := 4 + 2*slot
		if vo+2 > int(flatbuffers.GetVOffsetT(meta[vtable:])) || vtable+vo+2 > len(meta) {
			return -1 // past the vtable's end: absent
		}
		o := int(flatbuffers.GetVOffsetT(meta[vtable+vo:]))
		if o == 0 || int(t.Pos)+o+size > len(meta) {
			return -1
		}
		return int(t.Pos) + o
	}
	var body int64
	if at := field(ipcSlotHeaderType, 1); at >= 0 {
		kind = meta[at]
	}
	if at := field(ipcSlotBodyLength, 8); at >= 0 {
		body = int64(binary.LittleEndian.Uint64(meta[at:]))
	}
	if body < 0 || body > int64(avail-8-metaLen) {
		return 0, 0, false
	}
	return kind, 8 + metaLen + int(body), true
}

// spliceEntries joins WAL entries that each hold one schema message, one record batch and the
// end-of-stream marker, all with byte-identical schema messages, into one entry holding every
// batch in order: the rows are not decoded or copied again (the result's pieces are the entries'
// pieces: the entries must not be released before it). ok is false when any entry has another
// shape (the caller then concatenates and encodes the records).
func spliceEntries(entries []*entryData) (*entryData, bool) {
	kind, schemaLen, ok := entries[0].messageAt(0)
	if !ok || kind != ipcHeaderSchema {
		return nil, false
	}
	schema, _ := entries[0].view(0, schemaLen)
	out := &entryData{pieces: entries[0].appendRange(nil, 0, schemaLen)}
	for _, e := range entries {
		if got, ok := e.view(0, schemaLen); !ok || !bytes.Equal(got, schema) {
			return nil, false
		}
		kind, batchLen, ok := e.messageAt(schemaLen)
		if !ok || kind != ipcHeaderRecordBatch {
			return nil, false
		}
		if eos, ok := e.view(schemaLen+batchLen, len(ipcEOS)); !ok || !bytes.Equal(eos, ipcEOS) || e.size != schemaLen+batchLen+len(ipcEOS) {
			return nil, false
		}
		out.pieces = e.appendRange(out.pieces, schemaLen, schemaLen+batchLen)
	}
	out.pieces = append(out.pieces, ipcEOS)
	for _, p := range out.pieces {
		out.size += len(p)
	}
	return out, true
}

// decodeEntry returns a WAL entry's rows, batch by batch in entry order (rows are numbered
// across them), each laid out as schema (the table schema; columns the entry omits are null).
// With shared, the batches' buffers are slices of data (which must never be modified: bytes read
// for this decode, or shared read-only by a read cache); otherwise they are copies, so that the
// batches do not keep data alive (a claim's replay decodes frames out of a whole segment and
// keeps the rows in its memtable). The caller releases the batches.
func decodeEntry(data []byte, schema *arrow.Schema, keyColumn string, mem memory.Allocator, shared bool) ([]arrow.RecordBatch, error) {
	read := arrowutil.ReadBytesBatchesCopy
	if shared {
		read = arrowutil.ReadBytesBatches
	}
	parts, _, err := read(data, mem, walDecodeLimit(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	defer releaseAll(parts)
	out := make([]arrow.RecordBatch, 0, len(parts))
	for _, p := range parts {
		rec, err := alignDecoded(p, schema, keyColumn, mem)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// walDecodeLimit bounds what decoding a WAL entry may allocate: its bodies (never more than the
// entry) with room for buffer rounding. WAL entries are not compressed.
func walDecodeLimit(data []byte) int64 { return 2*int64(len(data)) + 64<<10 }

// alignDecoded lays one decoded WAL batch out as schema after validating it in full (see
// validateColumns, validateIndexed): nothing downstream may ever see a batch that could make it
// panic.
func alignDecoded(p arrow.RecordBatch, schema *arrow.Schema, keyColumn string, mem memory.Allocator) (arrow.RecordBatch, error) {
	if err := validateColumns(p); err != nil {
		return nil, err
	}
	rec, err := table.Align(p, schema, mem)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := validateIndexed(rec, keyColumn); err != nil {
		rec.Release()
		return nil, err
	}
	return rec, nil
}

// decodeFile returns the batches of a format 1 generation file (laid out as the table schema),
// in order, each validated like a WAL entry's.
func decodeFile(data []byte, keyColumn string, mem memory.Allocator) ([]arrow.RecordBatch, error) {
	n := int64(len(data))
	r, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(mem), ipc.WithMetadataSizeLimit(n), ipc.WithBodySizeLimit(n))
	if err != nil {
		return nil, fmt.Errorf("%w: generation: %w", ErrCorrupt, err)
	}
	defer r.Close()
	var parts []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			releaseAll(parts)
			return nil, fmt.Errorf("%w: generation: %w", ErrCorrupt, err)
		}
		parts = append(parts, rec)
		if err := validateColumns(rec); err != nil {
			releaseAll(parts)
			return nil, err
		}
		if err := validateIndexed(rec, keyColumn); err != nil {
			releaseAll(parts)
			return nil, err
		}
	}
	return parts, nil
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
