package shard

import (
	"bytes"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

func TestSpliceEntriesNeedsOneShape(t *testing.T) {
	mem := checkedAlloc(t)
	enc := func(ids ...string) []byte {
		rec := stampedRows(mem, ids, 7)
		defer rec.Release()
		data, err := encodeEntry(rec, mem)
		require.NoError(t, err)
		return data
	}
	a, b := enc("a"), enc("b", "c")
	spliced, ok := spliceEntries([]*entryData{entryBytes(a), entryBytes(b)})
	require.True(t, ok)
	joined := spliced.join()
	recs, err := decodeEntry(joined, tableSchema, "id", mem, false)
	require.NoError(t, err)
	var ids []string
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			ids = append(ids, rec.Column(0).(*array.String).Value(i))
		}
	}
	require.Equal(t, []string{"a", "b", "c"}, ids)
	require.Len(t, recs, 2, "one batch per spliced append")
	releaseAll(recs)

	other := arrow.NewSchema(userSchema.Fields()[:2], nil)
	bld := array.NewRecordBuilder(mem, other)
	bld.Field(0).(*array.StringBuilder).Append("d")
	bld.Field(1).(*array.Int64Builder).Append(1)
	d := bld.NewRecordBatch()
	bld.Release()
	dEnc, err := encodeEntry(d, mem)
	d.Release()
	require.NoError(t, err)
	_, ok = spliceEntries([]*entryData{entryBytes(a), entryBytes(dEnc)})
	require.False(t, ok, "different schema messages")
	_, ok = spliceEntries([]*entryData{entryBytes(a), entryBytes(b[:len(b)-3])})
	require.False(t, ok, "a truncated entry")
	_, ok = spliceEntries([]*entryData{entryBytes(joined), entryBytes(a)})
	require.False(t, ok, "an entry of two batches")
}

func FuzzIPCMessage(f *testing.F) {
	mem := memory.NewGoAllocator()
	rec := rows(mem, []string{"a", "b"}, 1)
	data, err := encodeEntry(rec, mem)
	rec.Release()
	require.NoError(f, err)
	f.Add(data)
	f.Add(data[:12])
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 8, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, n, ok := ipcMessage(data)
		if ok {
			require.LessOrEqual(t, n, len(data))
			require.GreaterOrEqual(t, n, 8)
			_ = kind
		}
		_, _ = spliceEntries([]*entryData{entryBytes(data), entryBytes(data)})
		// The same bytes in pieces of every size answer the same.
		for cut := range min(len(data), 40) {
			split := &entryData{pieces: [][]byte{data[:cut], data[cut:]}, size: len(data)}
			gotKind, gotN, gotOK := split.messageAt(0)
			wantKind, wantN, wantOK := ipcMessage(data)
			require.Equal(t, []any{wantKind, wantN, wantOK}, []any{gotKind, gotN, gotOK})
		}
	})
}

// A WAL entry whose bytes decode but hold an invalid batch is ErrCorrupt, never a panic.
func TestCorruptWALEntriesAreErrorsNotPanics(t *testing.T) {
	mem := checkedAlloc(t)
	ids := badOffsets()
	defer ids.Release()
	var buf bytes.Buffer
	schema := arrow.NewSchema(tableSchema.Fields()[:1], nil)
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	rec := array.NewRecordBatch(schema, []arrow.Array{ids}, 2)
	require.NoError(t, w.Write(rec))
	rec.Release()
	require.NoError(t, w.Close())
	_, err := decodeEntry(buf.Bytes(), tableSchema, "id", mem, false)
	require.ErrorIs(t, err, ErrCorrupt)

	// Valid Arrow, but without the columns a memtable indexes.
	good := rows(mem, []string{"a"}, 1)
	data, err := encodeEntry(good, mem)
	good.Release()
	require.NoError(t, err)
	_, err = decodeEntry(data, tableSchema, "id", mem, false)
	require.ErrorIs(t, err, ErrCorrupt)

	// A body length past the end of the entry.
	_, err = decodeEntry(data[:len(data)-16], tableSchema, "id", mem, false)
	require.True(t, errors.Is(err, ErrCorrupt), "%v", err)
}

// Replay and merges decode WAL bytes: any bytes give batches or an error, never a panic, and
// every batch returned is valid.
func FuzzDecodeEntry(f *testing.F) {
	mem := memory.NewGoAllocator()
	rec := stampedRows(mem, []string{"a", "b"}, 1)
	data, err := encodeEntry(rec, mem)
	rec.Release()
	require.NoError(f, err)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F})
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		shared, sharedErr := decodeEntry(data, tableSchema, "id", mem, true) // slices of data
		recs, err := decodeEntry(data, tableSchema, "id", mem, false)
		require.Equal(t, err == nil, sharedErr == nil, "shared and copied decodes agree: %v / %v", err, sharedErr)
		if err == nil {
			require.Equal(t, len(recs), len(shared))
			for i := range recs {
				require.Equal(t, recs[i].NumRows(), shared[i].NumRows())
			}
			releaseAll(shared)
		}
		if err != nil {
			// The Arrow library does not release the columns it built before failing on a later
			// one (garbage the Go allocator collects), so only successes are checked for leaks.
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		defer mem.AssertSize(t, 0)
		for _, r := range recs {
			require.NoError(t, validateColumns(r))
			require.NoError(t, validateIndexed(r, "id"))
		}
		releaseAll(recs)
	})
}
