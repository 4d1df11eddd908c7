package shard

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// largeStampedRows is n stamped rows whose payloads are size bytes each.
func largeStampedRows(mem memory.Allocator, n, size int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, tableSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("k%06d", i))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.StringBuilder).Append(strings.Repeat(string(rune('a'+i%26)), size))
		b.Field(3).(*array.Uint64Builder).Append(uint64(i + 1))
		b.Field(4).(*array.BooleanBuilder).Append(false)
	}
	return b.NewRecordBatch()
}

// plainEncoding is rec written by the IPC stream writer into one buffer (the bytes an entry must
// hold, whatever its pieces).
func plainEncoding(t *testing.T, rec arrow.RecordBatch) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func inside(p, buf []byte) bool {
	start, end := uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))+uintptr(len(buf))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return at >= start && at+uintptr(len(p)) <= end
}

// A large append's entry references its column buffers where they lie: writing it to the WAL
// holds no second copy of its rows. Its bytes are exactly the IPC stream of the record.
func TestALargeAppendsEntryReferencesItsColumnsInsteadOfCopyingThem(t *testing.T) {
	mem := checkedAlloc(t)
	rec := largeStampedRows(mem, 64, 64<<10) // a 4 MiB payload column
	defer rec.Release()
	e, err := gatherEntry(rec, mem)
	require.NoError(t, err)
	defer e.release()

	payload := rec.Column(2).Data().Buffers()[2].Bytes()
	var referenced, owned int
	for _, p := range e.pieces {
		if inside(p, payload) {
			referenced += len(p)
		}
	}
	for _, b := range e.owned {
		owned += cap(b)
	}
	require.Equal(t, len(payload), referenced, "the payload column is one referenced piece")
	require.Less(t, owned, 64<<10, "what the entry copied: framing, metadata and the small columns")
	require.Equal(t, plainEncoding(t, rec), e.join())

	recs, err := decodeEntry(e.join(), tableSchema, "id", mem, false)
	require.NoError(t, err)
	defer releaseAll(recs)
	require.Equal(t, rec.Column(2).(*array.String).Value(63), recs[0].Column(2).(*array.String).Value(63))
}

// Buffers the encoder makes itself (a sliced array's rebased offsets and shifted validity) are
// copied, never referenced: the entry still holds exactly the record's IPC stream after the
// encoder has freed them.
func TestEntryBytesOutsideTheRecordsBuffersAreCopied(t *testing.T) {
	mem := checkedAlloc(t)
	rec := largeStampedRows(mem, 300_000, 8) // offsets of 1.2 MB
	defer rec.Release()
	sliced := rec.NewSlice(3, 290_001)
	defer sliced.Release()
	e, err := gatherEntry(sliced, mem)
	require.NoError(t, err)
	defer e.release()
	for _, p := range e.pieces {
		inOwned := false
		for _, b := range e.owned {
			inOwned = inOwned || inside(p, b[:cap(b)])
		}
		inRecord := false
		for _, c := range sliced.Columns() {
			for _, b := range c.Data().Buffers() {
				inRecord = inRecord || (b != nil && inside(p, b.Bytes()))
			}
		}
		require.True(t, inOwned || inRecord, "a piece of %d bytes lies outside the entry's buffers and the record's", len(p))
	}
	require.Equal(t, plainEncoding(t, sliced), e.join())
}

// A frame's pieces are written with referenced pieces alone and each run of small pieces as one
// write, at the offsets that lay them back to back.
func TestWritePiecesCoalescesSmallPiecesAndKeepsLargeOnesWhole(t *testing.T) {
	large := bytes.Repeat([]byte{'L'}, minReferencedPiece)
	e := &entryData{pieces: [][]byte{[]byte("ab"), []byte("cd"), large, []byte("ef"), large, large, []byte("g")}}
	for _, p := range e.pieces {
		e.size += len(p)
	}
	type write struct{ off, n int }
	var writes []write
	var out []byte
	require.NoError(t, e.writePieces(func(p []byte, off int) error {
		require.Equal(t, len(out), off, "writes follow each other")
		writes = append(writes, write{off, len(p)})
		out = append(out, p...)
		return nil
	}))
	L := minReferencedPiece
	require.Equal(t, []write{{0, 4}, {4, L}, {4 + L, 2}, {6 + L, L}, {6 + 2*L, L}, {6 + 3*L, 1}}, writes)
	require.Equal(t, e.join(), out)
	e.release()

	// An entry of one small piece (a group of one small append) is written as it is: no copy.
	small := []byte("one small entry")
	one := entryBytes(small)
	require.NoError(t, one.writePieces(func(p []byte, off int) error {
		require.Zero(t, off)
		require.True(t, inside(p, small), "the piece itself, not a copy")
		return nil
	}))
}

// A spliced group of appends, some large, is the records' rows in order.
func TestSplicedLargeAndSmallAppendsDecodeInOrder(t *testing.T) {
	mem := checkedAlloc(t)
	small := stampedRows(mem, []string{"a"}, 1)
	defer small.Release()
	large := largeStampedRows(mem, 32, 64<<10)
	defer large.Release()
	var parts []*entryData
	for _, r := range []arrow.RecordBatch{small, large, small} {
		e, err := gatherEntry(r, mem)
		require.NoError(t, err)
		defer e.release()
		parts = append(parts, e)
	}
	spliced, ok := spliceEntries(parts)
	require.True(t, ok)
	defer spliced.release()
	recs, err := decodeEntry(spliced.join(), tableSchema, "id", mem, false)
	require.NoError(t, err)
	defer releaseAll(recs)
	require.Len(t, recs, 3)
	require.Equal(t, []int64{1, 32, 1}, []int64{recs[0].NumRows(), recs[1].NumRows(), recs[2].NumRows()})
	require.Equal(t, large.Column(2).(*array.String).Value(31), recs[1].Column(2).(*array.String).Value(31))
}
