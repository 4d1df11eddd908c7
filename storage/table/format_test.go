package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func TestSchemaJSONRoundTripsEverySupportedType(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8}, {Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64}, {Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true}, {Name: "bin", Type: arrow.BinaryTypes.LargeBinary},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "tokens", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "rel", Type: arrow.ListOf(arrow.StructOf(
			arrow.Field{Name: "target_id", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Float32, Nullable: true})), Nullable: true},
	}, nil)
	fields, err := encodeSchema(s)
	require.NoError(t, err)
	data, err := json.Marshal(fields)
	require.NoError(t, err)
	var back []fieldJSON
	require.NoError(t, json.Unmarshal(data, &back))
	got, err := decodeSchema(back)
	require.NoError(t, err)
	require.True(t, s.Equal(got), "%s\n%s", s, got)

	_, err = encodeType(arrow.FixedWidthTypes.MonthInterval)
	require.Error(t, err)
}

// A fragment is a plain Parquet file: a reader that knows nothing of Strata reads it with the
// Arrow types intact and row-group statistics present.
func TestFragmentsArePlainParquet(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	tbl := newTestTable(t, store, mem)
	upsertRows(t, tbl, mem, []row{{id: "b", value: 2, payload: "x", seq: 2}, {id: "a", value: 1, payload: "y", seq: 1}})
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	data, err := store.Get(ctx, m.Fragments[0].Path)
	require.NoError(t, err)

	plain := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer plain.AssertSize(t, 0)
	got, err := pqarrow.ReadTable(ctx, bytes.NewReader(data), parquet.NewReaderProperties(plain), pqarrow.ArrowReadProperties{}, plain)
	require.NoError(t, err)
	defer got.Release()
	require.EqualValues(t, 2, got.NumRows())
	require.Equal(t, []string{"id", "value", "payload", SeqColumn, TombstoneColumn}, fieldNames(got.Schema()))
	require.Equal(t, arrow.UINT64, got.Schema().Field(3).Type.ID())
	require.Equal(t, "a", m.Fragments[0].MinKey, "rows are sorted by key")
}

func fieldNames(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}

// A hung object-store call is bounded by the caller's context and leaves the table as it was.
func TestAHungStoreCallIsBoundedByTheContext(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
	tbl := newTestTable(t, faulty, mem)
	upsertRows(t, tbl, mem, []row{{id: "a", value: 1, seq: 1}})
	faulty.AddRule(objstoretest.Rule{Match: objstoretest.MatchKeyPrefix(versionsDir, objstoretest.OpPutIfAbsent), Hang: true})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	rec := batch(mem, []row{{id: "b", value: 1, seq: 2}})
	start := time.Now()
	_, err := tbl.Upsert(short, rec, UpsertOptions{})
	rec.Release()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	faulty.Reset()
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, sortedIDs(scanAll(t, tbl, m)))
	upsertRows(t, tbl, mem, []row{{id: "b", value: 1, seq: 2}}) // nothing stays wedged
}

func TestSegmentRoundTrip(t *testing.T) {
	var entries []indexEntry
	for i := range 1000 {
		entries = append(entries, indexEntry{Key: string(rune('a'+i%26)) + string(rune('A'+i/26)), Fragment: uint64(i % 7), Row: int64(i), Seq: uint64(i) << 16, Tombstone: i%9 == 0})
	}
	sortEntries(entries)
	data := encodeSegment(entries)
	tail := data[len(data)-runTailSize:]
	require.Equal(t, indexMagic, string(tail[4:]))
	flen := int(tail[0]) | int(tail[1])<<8 | int(tail[2])<<16 | int(tail[3])<<24
	f, err := decodeFooter(data[len(data)-runTailSize-flen : len(data)-runTailSize])
	require.NoError(t, err)
	require.EqualValues(t, 1000, f.entries)
	var back []indexEntry
	for _, p := range f.pages.refs(0, f.pages.len()) {
		page, err := decodePage(data[p.offset : p.offset+p.length])
		require.NoError(t, err)
		for i := range page.len() {
			back = append(back, page.at(i))
			found, ok := page.find(page.key(i))
			require.True(t, ok)
			require.Equal(t, page.at(i), found)
		}
		_, ok := page.find(page.key(0) + "\x00") // between two keys
		require.False(t, ok)
		_, ok = page.find("")
		require.False(t, ok)
	}
	require.Equal(t, entries, back)
	for _, e := range entries {
		require.True(t, f.bloom.TestString(e.Key))
	}
}

// A decoded run footer is charged to the object cache (and so to the memory governor's budget)
// at about the heap it holds: decoding copies of a 100,000-entry run's footer grows the live heap
// by their estimated bytes, within a quarter.
func TestARunFootersCacheCostIsTheHeapItHolds(t *testing.T) {
	entries := make([]indexEntry, 100_000)
	for i := range entries {
		entries[i] = indexEntry{Key: fmt.Sprintf("c%d-%d-%d", i%9, i/9, i%50), Fragment: uint64(i % 5), Row: int64(i), Seq: uint64(i)}
	}
	sortEntries(entries)
	data := encodeSegment(entries)
	entries = nil // garbage before the heap is first measured, not between the measurements
	flen := int(binary.LittleEndian.Uint32(data[len(data)-runTailSize:]))
	footer := data[len(data)-runTailSize-flen : len(data)-runTailSize]
	const copies = 20
	kept := make([]*runFooter, copies)
	heap := func() uint64 {
		// Twice: the first collection moves what sync.Pools hold (earlier tests' buffers) to
		// their victim caches, the second frees it, so none of it leaves between the readings.
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range kept {
		f, err := decodeFooter(footer)
		require.NoError(t, err)
		kept[i] = f
	}
	held := float64(heap() - before)
	estimated := float64(copies * kept[0].bytes())
	runtime.KeepAlive(kept)
	runtime.KeepAlive(data)
	require.InDelta(t, 1, held/estimated, 0.25, "held %.0f bytes, estimated %.0f", held, estimated)
}

// A decoded run footer's page directory is a fixed handful of allocations whatever its pages
// (every first key in one string, not one per page) and about 24 bytes a page beside its key:
// the footers of a table's runs are most of what the object cache holds for it.
func TestARunFootersPageDirectoryIsAFewAllocations(t *testing.T) {
	footerOf := func(n int) []byte {
		entries := make([]indexEntry, n)
		for i := range entries {
			entries[i] = indexEntry{Key: fmt.Sprintf("c%d-%07d", i%9, i), Row: int64(i)}
		}
		sortEntries(entries)
		data := encodeSegment(entries)
		flen := int(binary.LittleEndian.Uint32(data[len(data)-runTailSize:]))
		return data[len(data)-runTailSize-flen : len(data)-runTailSize]
	}
	allocs := func(footer []byte) float64 {
		return testing.AllocsPerRun(5, func() {
			if _, err := decodeFooter(footer); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := footerOf(64*10), footerOf(64*10_000)
	f, err := decodeFooter(large)
	require.NoError(t, err)
	require.Equal(t, 10_000, f.pages.len())
	require.InDelta(t, allocs(small), allocs(large), 20, "10 pages or 10,000: the same allocations, give or take the key buffer's growth")
	require.LessOrEqual(t, f.pages.bytes(), int64(10_000*(24+len("c0-0000000"))), "bytes a page")
}

func FuzzDecodeSegment(f *testing.F) {
	f.Add(encodeSegment([]indexEntry{{Key: "a", Fragment: 1, Row: 2, Seq: 3}, {Key: "b", Tombstone: true}}))
	f.Add(encodeSegment(nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Decoders must reject garbage with an error, never panic or over-allocate.
		_, _ = decodeFooter(data)
		_, _ = decodePage(data)
	})
}

func FuzzDecodeManifest(f *testing.F) {
	m := &Manifest{FormatVersion: FormatVersion, Version: 3, KeyColumn: "id"}
	_ = m.setSchema(withInternalColumns(testSchema))
	good, _ := json.Marshal(m)
	f.Add(good)
	f.Add([]byte(`{"format_version":1,"schema":[{"name":"x","type":{"list":{"name":"e","type":{"struct":[]}}}}]}`))
	f.Add([]byte(`{"format_version":1,"schema":[{"name":"x","type":{"timestamp":{"unit":"parsec"}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(data)
		if err == nil && m.Schema() == nil {
			t.Fatal("a decoded manifest always has a schema")
		}
	})
}
