// A bounds check of IPC message metadata (flatbuffers) before the Arrow library decodes it. The
// library sizes slices from counts in the metadata — schema fields, a field's children, custom
// metadata pairs, variadic buffer counts — so a few garbage bytes could make it allocate hundreds
// of gigabytes (a fatal, unrecoverable out-of-memory). checkMessageMeta walks exactly those
// counts and refuses any that the metadata's own size cannot hold.
package arrowutil

import (
	"encoding/binary"
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// Message header kinds and table field slots of the Arrow IPC flatbuffer schema (Message.fbs,
// Schema.fbs): a slot's vtable offset is 4 + 2*field id.
const (
	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3

	slotMessageHeaderType  = 4 + 2*1
	slotMessageHeader      = 4 + 2*2
	slotMessageMetadata    = 4 + 2*4
	slotSchemaFields       = 4 + 2*1
	slotSchemaMetadata     = 4 + 2*2
	slotFieldChildren      = 4 + 2*5
	slotFieldMetadata      = 4 + 2*6
	slotDictionaryData     = 4 + 2*1
	slotBatchBuffers       = 4 + 2*2
	slotBatchCompression   = 4 + 2*3
	slotBatchVariadicCount = 4 + 2*4

	maxFieldDepth = 64
)

var errBadMeta = errors.New("arrow/ipc: invalid message metadata")

// checkMessageMeta returns an error when a count in meta, an IPC message's metadata, exceeds what
// meta can hold. Malformed offsets are errors, not panics.
func checkMessageMeta(meta []byte) (err error) {
	defer func() {
		if recover() != nil {
			err = errBadMeta
		}
	}()
	c := metaChecker{buf: meta, budget: len(meta)}
	msg := c.root()
	if err := c.vector(msg, slotMessageMetadata, 4); err != nil {
		return err
	}
	o := msg.Offset(slotMessageHeaderType)
	if o == 0 {
		return nil
	}
	header, ok := c.table(msg, slotMessageHeader)
	if !ok {
		return nil
	}
	switch msg.GetByte(flatbuffers.UOffsetT(o) + msg.Pos) {
	case headerSchema:
		return c.schema(header)
	case headerDictionaryBatch:
		if batch, ok := c.table(header, slotDictionaryData); ok {
			return c.batch(batch)
		}
	case headerRecordBatch:
		return c.batch(header)
	}
	return nil
}

type metaChecker struct {
	buf    []byte
	budget int // tables still to visit: bounds the work of metadata whose offsets repeat
}

func (c *metaChecker) root() *flatbuffers.Table {
	return &flatbuffers.Table{Bytes: c.buf, Pos: flatbuffers.GetUOffsetT(c.buf)}
}

// table follows the table-valued field at slot of t.
func (c *metaChecker) table(t *flatbuffers.Table, slot flatbuffers.VOffsetT) (*flatbuffers.Table, bool) {
	o := t.Offset(slot)
	if o == 0 {
		return nil, false
	}
	return &flatbuffers.Table{Bytes: c.buf, Pos: t.Indirect(flatbuffers.UOffsetT(o) + t.Pos)}, true
}

// vector checks the length of the vector at slot of t (elements of elemSize bytes) and returns
// nil when it fits in the buffer.
func (c *metaChecker) vector(t *flatbuffers.Table, slot flatbuffers.VOffsetT, elemSize int) error {
	o := t.Offset(slot)
	if o == 0 {
		return nil
	}
	n := t.VectorLen(flatbuffers.UOffsetT(o))
	if n < 0 || n > len(c.buf)/elemSize {
		return fmt.Errorf("%w: a vector of %d elements in %d bytes of metadata", errBadMeta, n, len(c.buf))
	}
	return nil
}

// elements returns the tables of the table vector at slot of t (its length already checked).
func (c *metaChecker) elements(t *flatbuffers.Table, slot flatbuffers.VOffsetT) []*flatbuffers.Table {
	o := t.Offset(slot)
	if o == 0 {
		return nil
	}
	start, n := t.Vector(flatbuffers.UOffsetT(o)), t.VectorLen(flatbuffers.UOffsetT(o))
	out := make([]*flatbuffers.Table, n)
	for i := range out {
		pos := start + flatbuffers.UOffsetT(i*4)
		out[i] = &flatbuffers.Table{Bytes: c.buf, Pos: pos + flatbuffers.GetUOffsetT(c.buf[pos:])}
	}
	return out
}

func (c *metaChecker) schema(s *flatbuffers.Table) error {
	if err := c.vector(s, slotSchemaMetadata, 4); err != nil {
		return err
	}
	return c.fields(s, slotSchemaFields, 0)
}

func (c *metaChecker) fields(t *flatbuffers.Table, slot flatbuffers.VOffsetT, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("%w: fields nested deeper than %d", errBadMeta, maxFieldDepth)
	}
	if err := c.vector(t, slot, 4); err != nil {
		return err
	}
	for _, f := range c.elements(t, slot) {
		if c.budget--; c.budget < 0 {
			return fmt.Errorf("%w: too many fields", errBadMeta)
		}
		if err := c.vector(f, slotFieldMetadata, 4); err != nil {
			return err
		}
		if err := c.fields(f, slotFieldChildren, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// batch checks a record batch's variadic buffer counts: each names buffers of the batch's buffer
// vector (16 bytes an entry), so none may exceed what the metadata holds.
func (c *metaChecker) batch(b *flatbuffers.Table) error {
	if err := c.vector(b, slotBatchBuffers, 16); err != nil {
		return err
	}
	if err := c.vector(b, slotBatchVariadicCount, 8); err != nil {
		return err
	}
	o := b.Offset(slotBatchVariadicCount)
	if o == 0 {
		return nil
	}
	start, n := b.Vector(flatbuffers.UOffsetT(o)), b.VectorLen(flatbuffers.UOffsetT(o))
	for i := 0; i < n; i++ {
		v := b.GetInt64(start + flatbuffers.UOffsetT(i*8))
		if v < 0 || v > int64(len(c.buf)/16) {
			return fmt.Errorf("%w: a variadic buffer count of %d", errBadMeta, v)
		}
	}
	return nil
}

// declaredDecodedBytes is what the compressed buffers of a (checked) record or dictionary batch
// message say they decompress to: each compressed buffer starts with its uncompressed length
// (-1: stored as is). 0 for other messages and uncompressed batches. A prefix past the body, or a
// negative length other than -1, counts as the whole body: the library refuses such a buffer.
func declaredDecodedBytes(meta, body []byte) (n int64) {
	defer func() {
		if recover() != nil {
			n = int64(len(body))
		}
	}()
	c := metaChecker{buf: meta, budget: len(meta)}
	msg := c.root()
	o := msg.Offset(slotMessageHeaderType)
	if o == 0 {
		return 0
	}
	header, ok := c.table(msg, slotMessageHeader)
	if !ok {
		return 0
	}
	batch := header
	switch msg.GetByte(flatbuffers.UOffsetT(o) + msg.Pos) {
	case headerDictionaryBatch:
		if batch, ok = c.table(header, slotDictionaryData); !ok {
			return 0
		}
	case headerRecordBatch:
	default:
		return 0
	}
	if batch.Offset(slotBatchCompression) == 0 {
		return 0
	}
	bo := batch.Offset(slotBatchBuffers)
	if bo == 0 {
		return 0
	}
	start, count := batch.Vector(flatbuffers.UOffsetT(bo)), batch.VectorLen(flatbuffers.UOffsetT(bo))
	for i := 0; i < count; i++ {
		off := batch.GetInt64(start + flatbuffers.UOffsetT(i*16))
		length := batch.GetInt64(start + flatbuffers.UOffsetT(i*16+8))
		if length == 0 {
			continue
		}
		if off < 0 || length < 8 || off > int64(len(body))-8 {
			n += int64(len(body))
			continue
		}
		switch size := int64(binary.LittleEndian.Uint64(body[off:])); {
		case size == -1:
			n += length - 8
		case size < 0:
			n += int64(len(body))
		default:
			n += size
		}
	}
	return n
}
