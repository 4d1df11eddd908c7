// Multipart rollout appends (lance-context compatible): the first part, named "metadata", is the
// JSON body {records: [...]}; every further part carries one record's binary_payload and is named
// by the record's index ("0", "1", ...). The metadata is decoded exactly as strictly as a JSON
// body (the same decoder: duplicate keys, trailing data, invalid UTF-8 and non-object records are
// 400s), and each payload goes once into the record batch's binary_payload column (no base64 or
// JSON round trip). Anything ambiguous is rejected with 400 before anything is written: metadata
// not first, a part name that is not an index, an index out of range or repeated, a payload whose
// length differs from the record's payload_size, or a payload_size declared with no payload part.
package api

import (
	"encoding/binary"
	"errors"
	"io"
	"mime/multipart"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// decodeMultipartRollouts reads a multipart append into one record batch of rollout rows with
// their payloads. Payload parts are read back to back into one arrivalBuffer (the body's declared
// length bounds them all), which becomes the binary_payload column without a copy when the parts
// come in record order. The caller releases the batch.
func decodeMultipartRollouts(r *multipart.Reader, fill rowFill, mem memory.Allocator, declared int64) (arrow.RecordBatch, error) {
	first, err := r.NextPart()
	if err != nil {
		if limit := bodyLimitError(err); limit != nil {
			return nil, limit
		}
		return nil, invalid("multipart body has no parts")
	}
	if first.FormName() != "metadata" {
		return nil, invalid("the first multipart part must be \"metadata\", got %q", first.FormName())
	}
	meta, err := io.ReadAll(first)
	if err != nil {
		return nil, readPartError(err, "metadata")
	}
	if err := checkJSONSyntax(meta); err != nil {
		return nil, invalid("invalid metadata part: %s", errorFor(err).Message)
	}
	rec, err := rolloutCodec.decodeRowsJSON(meta, "records", fill, mem)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	rows := int(rec.NumRows())
	type span struct{ start, end int64 } // a payload's bytes in the buffer
	spans := map[int]span{}
	collected := newArrivalBuffer(declared)
	inOrder, last := true, -1
	for {
		part, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if limit := bodyLimitError(err); limit != nil {
				return nil, limit
			}
			return nil, invalid("malformed multipart body: %v", err)
		}
		idx, err := strconv.Atoi(part.FormName())
		if err != nil || idx < 0 || strconv.Itoa(idx) != part.FormName() {
			return nil, invalid("multipart part %q: payload parts are named by record index", part.FormName())
		}
		if idx >= rows {
			return nil, invalid("multipart part %d: there are only %d records", idx, rows)
		}
		if _, dup := spans[idx]; dup {
			return nil, invalid("multipart part %d appears twice", idx)
		}
		start := collected.len()
		if err := collected.readFrom(part); err != nil {
			return nil, readPartError(err, strconv.Itoa(idx))
		}
		spans[idx] = span{start, collected.len()}
		inOrder, last = inOrder && idx > last, idx
	}
	buf := collected.bytes()
	payloads := make(map[int][]byte, len(spans)) // each a slice of buf
	for idx, sp := range spans {
		payloads[idx] = buf[sp.start:sp.end:sp.end]
	}
	sizes := rec.Column(rec.Schema().FieldIndices("payload_size")[0]).(*array.Int64)
	for i := 0; i < rows; i++ {
		data, sent := payloads[i]
		switch {
		case sizes.IsNull(i):
		case !sent:
			return nil, invalid("record %d declares payload_size %d but no payload part was sent", i, sizes.Value(i))
		case sizes.Value(i) != int64(len(data)):
			return nil, invalid("record %d: payload_size %d but the part has %d bytes", i, sizes.Value(i), len(data))
		}
	}
	if len(payloads) == 0 {
		rec.Retain()
		return rec, nil
	}
	if inOrder {
		if out, ok := withPayloadBuffer(rec, payloads, buf); ok {
			return out, nil
		}
	}
	return withPayloads(rec, payloads, mem), nil
}

// withPayloadBuffer returns rec with binary_payload made from buf without copying, when that is
// possible: the payloads, in record order, lie back to back in buf and every record without one
// has a null payload in the metadata. ok is false otherwise.
func withPayloadBuffer(rec arrow.RecordBatch, payloads map[int][]byte, buf []byte) (arrow.RecordBatch, bool) {
	col := rec.Schema().FieldIndices("binary_payload")[0]
	old := rec.Column(col)
	rows := old.Len()
	offsets := make([]int64, rows+1)
	valid := make([]byte, (rows+7)/8)
	var at int64
	for i := 0; i < rows; i++ {
		offsets[i] = at
		p, sent := payloads[i]
		switch {
		case sent:
			if len(p) > 0 && &p[0] != &buf[at] {
				return nil, false // read before buf grew: the part lives in buf's old array
			}
			at += int64(len(p))
			valid[i/8] |= 1 << (i % 8)
		case !old.IsNull(i):
			return nil, false // a payload given inline in the metadata
		}
	}
	offsets[rows] = at
	ob := make([]byte, 8*len(offsets))
	for i, o := range offsets {
		binary.LittleEndian.PutUint64(ob[8*i:], uint64(o))
	}
	data := array.NewData(arrow.BinaryTypes.LargeBinary, rows,
		[]*memory.Buffer{memory.NewBufferBytes(valid), memory.NewBufferBytes(ob), memory.NewBufferBytes(buf[:at])}, nil, array.UnknownNullCount, 0)
	defer data.Release()
	arr := array.MakeFromData(data)
	defer arr.Release()
	out, err := rec.SetColumn(col, arr)
	if err != nil {
		return nil, false
	}
	return out, true
}

// readPartError maps an error reading a part's body: 413/408/503 as for any body, else 400.
func readPartError(err error, part string) error {
	if limit := bodyLimitError(err); limit != nil {
		return limit
	}
	return invalid("reading multipart part %s: %v", part, err)
}

// withPayloads returns rec with binary_payload replaced by payloads (by row) where sent, keeping
// the metadata's own value elsewhere.
func withPayloads(rec arrow.RecordBatch, payloads map[int][]byte, mem memory.Allocator) arrow.RecordBatch {
	col := rec.Schema().FieldIndices("binary_payload")[0]
	old := rec.Column(col).(*array.LargeBinary)
	total := 0
	for _, p := range payloads {
		total += len(p)
	}
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.LargeBinary)
	defer b.Release()
	b.Reserve(old.Len())
	b.ReserveData(total + len(old.ValueBytes()))
	for i := 0; i < old.Len(); i++ {
		switch p, sent := payloads[i]; {
		case sent:
			b.Append(p)
			delete(payloads, i) // let the part's memory go as soon as it is copied
		case old.IsNull(i):
			b.AppendNull()
		default:
			b.Append(old.Value(i))
		}
	}
	arr := b.NewArray()
	defer arr.Release()
	out, _ := rec.SetColumn(col, arr)
	return out
}
