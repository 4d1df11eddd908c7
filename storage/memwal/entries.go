// Encodings of the MemWAL's objects. WAL entries are Arrow IPC streams (one per group commit).
// A generation is its key file: its keys in order with _seq, tombstone flag and where the row
// lives — (entry, row) in the WAL entries the generation references (format 2), or the row of
// the same index in a separate Arrow IPC file (format 1, written by earlier releases and still
// read), so reads resolve a key without touching any row data.
package memwal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/table"
)

// encodeEntry encodes a WAL entry: rec as one IPC stream, without its nullable columns that are
// null in every row (a wide schema's unused columns would otherwise be written as zeroed buffers,
// about a sixth of a typical rollout row); decodeEntry restores them as nulls.
func encodeEntry(rec arrow.RecordBatch, mem memory.Allocator) ([]byte, error) {
	var fields []arrow.Field
	var cols []arrow.Array
	size := uint64(1 << 12)
	for i, c := range rec.Columns() {
		f := rec.Schema().Field(i)
		if f.Nullable && c.NullN() == c.Len() {
			continue
		}
		fields, cols = append(fields, f), append(cols, c)
		size += c.Data().SizeInBytes() + 1<<8
	}
	kept := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer kept.Release()
	buf := bytes.NewBuffer(entryBuffer(int(size)))
	w := ipc.NewWriter(buf, ipc.WithSchema(kept.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(kept); err != nil {
		_ = w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
func ipcMessage(data []byte) (kind byte, length int, ok bool) {
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
	if body < 0 || body > int64(len(data)-8-metaLen) {
		return 0, 0, false
	}
	return kind, 8 + metaLen + int(body), true
}

// spliceEntries joins WAL entries that each hold one schema message, one record batch and the
// end-of-stream marker, all with byte-identical schema messages, into one entry holding every
// batch in order: the rows are not decoded or copied twice. ok is false when any entry has
// another shape (the caller then concatenates and encodes the records).
func spliceEntries(entries [][]byte) ([]byte, bool) {
	kind, schemaLen, ok := ipcMessage(entries[0])
	if !ok || kind != ipcHeaderSchema {
		return nil, false
	}
	schema := entries[0][:schemaLen]
	size := schemaLen + len(ipcEOS)
	for _, e := range entries {
		if len(e) < schemaLen || !bytes.Equal(e[:schemaLen], schema) {
			return nil, false
		}
		kind, batchLen, ok := ipcMessage(e[schemaLen:])
		if !ok || kind != ipcHeaderRecordBatch || !bytes.Equal(e[schemaLen+batchLen:], ipcEOS) {
			return nil, false
		}
		size += batchLen
	}
	out := entryBuffer(size)
	out = append(out, schema...)
	for _, e := range entries {
		out = append(out, e[schemaLen:len(e)-len(ipcEOS)]...)
	}
	return append(out, ipcEOS...), true
}

// decodeEntry returns a WAL entry's rows, batch by batch in entry order (rows are numbered
// across them), each laid out as schema (the table schema; columns the entry omits are null).
// The caller releases the batches.
func decodeEntry(data []byte, schema *arrow.Schema, keyColumn string, mem memory.Allocator) ([]arrow.RecordBatch, error) {
	parts, _, err := arrowutil.ReadBytesBatchesCopy(data, mem, walDecodeLimit(data))
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

// genKeys is a generation's key file, decoded: keys ascending, one per key.
type genKeys struct {
	keys  []string
	seqs  []uint64
	tombs []bool
	// Entry-backed generations (format 2) only: the WAL positions holding the rows, where each
	// of those entries is, and per key the index into entries and the row within that entry. Nil
	// for format 1 (key i is row i of the generation's Arrow file).
	entries []uint64
	locs    []walLoc // parallel to entries
	entry   []uint32
	row     []uint32
}

// Key file magics: format 2 with entry objects only (SGK2), or with entry locations (SGK3).
const (
	keyFileMagic          = "SGK2"
	keyFileLocationsMagic = "SGK3"
)

// approxBytes estimates the memory a decoded key file holds (for the object cache).
func (k *genKeys) approxBytes() int64 {
	n := int64(256 + 48*len(k.keys) + 48*len(k.entries))
	for _, key := range k.keys {
		n += int64(len(key))
	}
	return n
}

func (k *genKeys) find(key string) (int, bool) {
	lo, hi := 0, len(k.keys)
	for lo < hi {
		mid := (lo + hi) / 2
		if k.keys[mid] < key {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(k.keys) && k.keys[lo] == key
}

// encodeKeys writes a format 2 key file (docs/format/memwal.md):
//
//	"SGK2", entry count, entry positions, key count, then per key: key length, key bytes, _seq,
//	flags (bit 0 tombstone), entry index, row — all integers uvarints.
//
// When any entry is a segment frame, the magic is "SGK3" and each entry position is followed by
// its location: segment name length, name bytes (empty: the entry object), frame offset,
// payload length.
func encodeKeys(k *genKeys) []byte {
	var buf bytes.Buffer
	var tmp [binary.MaxVarintLen64]byte
	put := func(v uint64) { buf.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	withLocs := slices.ContainsFunc(k.locs, func(l walLoc) bool { return l.Segment != "" })
	if withLocs {
		buf.WriteString(keyFileLocationsMagic)
	} else {
		buf.WriteString(keyFileMagic)
	}
	put(uint64(len(k.entries)))
	for i, p := range k.entries {
		put(p)
		if withLocs {
			l := k.locs[i]
			put(uint64(len(l.Segment)))
			buf.WriteString(l.Segment)
			put(uint64(l.Offset))
			put(uint64(l.Length))
		}
	}
	put(uint64(len(k.keys)))
	for i, key := range k.keys {
		put(uint64(len(key)))
		buf.WriteString(key)
		put(k.seqs[i])
		if k.tombs[i] {
			buf.WriteByte(1)
		} else {
			buf.WriteByte(0)
		}
		put(uint64(k.entry[i]))
		put(uint64(k.row[i]))
	}
	return buf.Bytes()
}

var errCorruptKeys = errors.New("memwal: corrupt generation key file")

// keyReader consumes a key file's fields; the first malformed field sticks as err.
type keyReader struct {
	data []byte
	err  bool
}

func (r *keyReader) uvarint() uint64 {
	v, w := binary.Uvarint(r.data)
	if w <= 0 {
		r.err, r.data = true, nil
		return 0
	}
	r.data = r.data[w:]
	return v
}

func (r *keyReader) bytes(n uint64) []byte {
	if n > uint64(len(r.data)) {
		r.err, r.data = true, nil
		return nil
	}
	b := r.data[:n]
	r.data = r.data[n:]
	return b
}

// decodeKeys reads a key file: format 2 (entry-backed) or, when entryBacked is false, format 1
// (count, then per key: key length, key bytes, _seq, flags).
func decodeKeys(data []byte, entryBacked bool) (*genKeys, error) {
	r := &keyReader{data: data}
	k := &genKeys{}
	if entryBacked {
		magic := string(r.bytes(uint64(len(keyFileMagic))))
		if magic != keyFileMagic && magic != keyFileLocationsMagic {
			return nil, errCorruptKeys
		}
		n := r.uvarint()
		if n > uint64(len(r.data)) {
			return nil, errCorruptKeys
		}
		k.entries, k.locs = make([]uint64, n), make([]walLoc, n)
		for i := range k.entries {
			k.entries[i] = r.uvarint()
			if i > 0 && k.entries[i] <= k.entries[i-1] {
				return nil, errCorruptKeys
			}
			if magic == keyFileLocationsMagic {
				name := string(r.bytes(r.uvarint()))
				off, length := r.uvarint(), r.uvarint()
				if _, _, ok := parseSegmentName(name); (name != "" && !ok) || off > 1<<62 || length > 1<<62 {
					return nil, errCorruptKeys
				}
				k.locs[i] = walLoc{Segment: name, Offset: int64(off), Length: int64(length)}
			}
		}
	}
	n := r.uvarint()
	if r.err || n > uint64(len(r.data)) {
		return nil, errCorruptKeys
	}
	k.keys, k.seqs, k.tombs = make([]string, 0, n), make([]uint64, 0, n), make([]bool, 0, n)
	for i := uint64(0); i < n; i++ {
		key := string(r.bytes(r.uvarint()))
		seq := r.uvarint()
		flags := r.bytes(1)
		if r.err || flags[0] > 1 || (i > 0 && key <= k.keys[len(k.keys)-1]) {
			return nil, errCorruptKeys
		}
		k.keys, k.seqs, k.tombs = append(k.keys, key), append(k.seqs, seq), append(k.tombs, flags[0]&1 == 1)
		if entryBacked {
			e, row := r.uvarint(), r.uvarint()
			if r.err || e >= uint64(len(k.entries)) || row > 1<<32-1 {
				return nil, errCorruptKeys
			}
			k.entry, k.row = append(k.entry, uint32(e)), append(k.row, uint32(row))
		}
	}
	if len(r.data) != 0 {
		return nil, errCorruptKeys
	}
	return k, nil
}
