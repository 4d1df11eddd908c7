package memwal

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/table"
)

var userSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func checkedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// env is one object store shared by several simulated processes.
type env struct {
	t       testing.TB
	objects objstore.Store
	mem     memory.Allocator
	clock   *hlc.Clock
	budget  *budget.Budget
}

func newEnv(t testing.TB, objects objstore.Store) *env {
	return &env{t: t, objects: objects, mem: checkedAlloc(t), clock: hlc.New(nil), budget: budget.New(0, nil)}
}

// testEntryObjects: with STRATA_TEST_WAL_LAYOUT=entries the tests run with WAL entry objects
// on stores that can write in place too (the layout of stores that cannot); `make test` runs
// this package both ways. Tests of one layout's own behaviour choose it themselves.
var testEntryObjects = os.Getenv("STRATA_TEST_WAL_LAYOUT") == "entries"

func (e *env) opts(instance string) Options {
	return Options{Instance: instance, Allocator: e.mem, Clock: e.clock, Budget: e.budget,
		Writer: WriterOptions{GroupCommitWindow: time.Millisecond, EntryObjects: testEntryObjects}, IOTimeout: 10 * time.Second}
}

// withEntryObjects makes the store write WAL entry objects, whatever the store can do.
func withEntryObjects(o *Options) { o.Writer.EntryObjects = true }

// withSegments makes the store write WAL segments (the env's store must write in place).
func withSegments(o *Options) { o.Writer.EntryObjects = false }

// groupWrite matches the writes that make a group commit durable, in either layout: an entry
// object's put-if-absent (a claim's fence too) or a write into a segment (each frame is two).
func groupWrite(shard string) func(op objstoretest.Op, key string) bool {
	return func(op objstoretest.Op, key string) bool {
		return (op == objstoretest.OpPutIfAbsent && strings.HasPrefix(key, entryPrefix(shard))) ||
			(op == objstoretest.OpWriteAt && strings.HasPrefix(key, segmentPrefix(shard)))
	}
}

// walPayloads returns every WAL entry of shard that counts, by position: the entry objects and
// the intact frames of its segments (each up to its listed length, if listed).
func walPayloads(t testing.TB, objects objstore.Store, shard string) map[uint64][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[uint64][]byte{}
	objs, err := objstore.ListAll(ctx, objects, walDir+shard+"/")
	require.NoError(t, err)
	m, _, err := latestShardManifest(ctx, objects, shard)
	require.NoError(t, err)
	for _, o := range objs {
		if p, ok := parseNumbered(o.Key, entryPrefix(shard), ".arrows"); ok {
			data, err := objects.Get(ctx, o.Key)
			require.NoError(t, err)
			out[p] = data
			continue
		}
		name, ok := strings.CutPrefix(o.Key, segmentPrefix(shard))
		if !ok {
			continue
		}
		data, err := objects.Get(ctx, o.Key)
		require.NoError(t, err)
		for _, ref := range m.Segments {
			if ref.Name == name {
				data = data[:ref.Length]
			}
		}
		frames, _ := scanSegment(data)
		for _, f := range frames {
			out[f.pos] = f.payload
		}
	}
	return out
}

// open opens (creating the table if needed) the store as process instance.
func (e *env) open(instance string, mod ...func(*Options)) *Store {
	o := e.opts(instance)
	for _, f := range mod {
		f(&o)
	}
	s, err := Create(context.Background(), e.objects, userSchema, "id", o)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func rows(mem memory.Allocator, ids []string, value int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, userSchema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(value)
		b.Field(2).(*array.StringBuilder).Append("payload-" + id)
	}
	return b.NewRecordBatch()
}

func appendIDs(t testing.TB, s *Store, mem memory.Allocator, value int64, ids ...string) AppendResult {
	t.Helper()
	rec := rows(mem, ids, value)
	defer rec.Release()
	res, err := s.Append(context.Background(), rec)
	require.NoError(t, err)
	return res
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

// value reads key's value column through s (-1 when absent).
func value(t testing.TB, s *Store, key string) int64 {
	t.Helper()
	rec, err := s.Get(context.Background(), key, []string{"value"})
	require.NoError(t, err)
	if rec == nil {
		return -1
	}
	defer rec.Release()
	return rec.Column(0).(*array.Int64).Value(0)
}

// tableSchema is userSchema as stored: with _seq and _tombstone, as WAL entries hold rows.
var tableSchema = arrow.NewSchema(append(append([]arrow.Field{}, userSchema.Fields()...),
	arrow.Field{Name: table.SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
	arrow.Field{Name: table.TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean}), nil)

// stampedRows is rows laid out as tableSchema, with _seq = 1.. and no tombstones.
func stampedRows(mem memory.Allocator, ids []string, value int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, tableSchema)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(value)
		b.Field(2).(*array.StringBuilder).Append("payload-" + id)
		b.Field(3).(*array.Uint64Builder).Append(uint64(i + 1))
		b.Field(4).(*array.BooleanBuilder).Append(false)
	}
	return b.NewRecordBatch()
}
