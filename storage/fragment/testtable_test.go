package fragment

// testTable writes fragments as a table's upsert does (one fragment per upsert, row groups of
// RowGroupLength rows, nullable columns null in every row left out) and reads them back through
// a Reader, so the read tests drive this package the way the table does without the table's
// versions, deletion vectors or key index.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/typedrows"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

const (
	seqColumn       = "_seq"
	tombstoneColumn = "_tombstone"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// withInternalColumns is user with the table's _seq and _tombstone columns appended.
var withInternalColumns = typedrows.WithInternalColumns

// row is one test row of testSchema.
type row struct {
	id        string
	value     int64
	payload   string
	seq       uint64
	tombstone bool
}

// batch builds a record of testSchema (with _seq and _tombstone) from rows.
func batch(mem memory.Allocator, rows []row) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, withInternalColumns(testSchema))
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.id)
		if r.tombstone {
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(r.value)
			b.Field(2).(*array.StringBuilder).Append(r.payload)
		}
		b.Field(3).(*array.Uint64Builder).Append(r.seq)
		b.Field(4).(*array.BooleanBuilder).Append(r.tombstone)
	}
	return b.NewRecordBatch()
}

// randomLetters is n random lowercase letters: a payload that compresses little.
func randomLetters(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

// checkedAlloc returns an allocator that fails the test if anything leaks.
func checkedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// storeEveryColumn makes testTable write every column (as earlier releases did).
var storeEveryColumn = false

// testTable is a Reader over the fragments it wrote, one per Upsert, and where each id is.
type testTable struct {
	*Reader
	schema    *arrow.Schema // with _seq and _tombstone
	fragments []Ref
	rows      map[string]rowAt // id -> its fragment and row (the latest upsert's)
}

type rowAt struct {
	f   Ref
	row int64
}

// testManifest is what testTable.Latest returns: the fragments written so far.
type testManifest struct {
	Fragments []Ref
	schema    *arrow.Schema
}

func (m *testManifest) Schema() *arrow.Schema { return m.schema }

// UpsertOptions is a stand-in for the table's: testTable takes none.
type UpsertOptions struct{}

func newTestTable(t testing.TB, store objstore.Store, mem memory.Allocator) *testTable {
	return newTestTableOf(t, store, testSchema, mem)
}

func newTestTableOf(t testing.TB, store objstore.Store, user *arrow.Schema, mem memory.Allocator) *testTable {
	t.Helper()
	rd := &Reader{Store: store, Cache: cache.New(64<<20, nil).Namespace(), Mem: mem, Schemas: &Projections{}}
	return &testTable{Reader: rd, schema: withInternalColumns(user), rows: map[string]rowAt{}}
}

// Upsert writes rec (rows in key order) as one new fragment, a row group of RowGroupLength rows
// at a time.
func (tt *testTable) Upsert(ctx context.Context, rec arrow.RecordBatch, _ UpsertOptions) (Ref, error) {
	path := fmt.Sprintf("data/%04d.parquet", len(tt.fragments))
	w, err := NewWriter(ctx, tt.Store, path, rec, WriterOptions{Mem: tt.Mem, Codec: Codec,
		NullEverywhere: NullInEveryPart([]arrow.RecordBatch{rec}), StoreEveryColumn: storeEveryColumn})
	if err != nil {
		return Ref{}, err
	}
	groupN := RowGroupLength(rec)
	for at := int64(0); at < rec.NumRows(); at += groupN {
		group := rec.NewSlice(at, min(at+groupN, rec.NumRows()))
		err := w.Write(group)
		group.Release()
		if err != nil {
			w.Abort()
			return Ref{}, err
		}
	}
	size, err := w.Finish(ctx)
	if err != nil {
		return Ref{}, err
	}
	f := Ref{Path: path, Bytes: size}
	tt.fragments = append(tt.fragments, f)
	ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.String)
	for i := range ids.Len() {
		tt.rows[ids.Value(i)] = rowAt{f, int64(i)}
	}
	return f, nil
}

func upsertRows(t testing.TB, tbl *testTable, mem memory.Allocator, rows []row) {
	t.Helper()
	sort.Slice(rows, func(i, j int) bool { return rows[i].id < rows[j].id })
	rec := batch(mem, rows)
	defer rec.Release()
	_, err := tbl.Upsert(context.Background(), rec, UpsertOptions{})
	require.NoError(t, err)
}

// Latest is every fragment written so far.
func (tt *testTable) Latest(context.Context) (*testManifest, error) {
	return &testManifest{Fragments: append([]Ref(nil), tt.fragments...), schema: tt.schema}, nil
}

// BuildKeyIndex does nothing: testTable knows where each id is.
func (tt *testTable) BuildKeyIndex(context.Context) (struct{}, error) { return struct{}{}, nil }

// Get reads the row of key (every column) as a table's point get does, after its key index
// named the row: its footer, then the row read from its row group's pages.
func (tt *testTable) Get(ctx context.Context, m *testManifest, key string, _ []string) (arrow.RecordBatch, error) {
	at, ok := tt.rows[key]
	if !ok {
		return nil, nil
	}
	ft, err := tt.Footer(ctx, at.f)
	if err != nil {
		return nil, err
	}
	rg, off := ft.RowGroupOf(at.row)
	names := make([]string, m.schema.NumFields())
	for i, f := range m.schema.Fields() {
		names[i] = f.Name
	}
	return tt.ReadRowsAt(ctx, at.f, Columns{Schema: m.schema, Names: names}, rg, []int64{off})
}

// The table's former internal read methods, spelled as the tests call them.

func (tt *testTable) fragmentFooter(ctx context.Context, f Ref) (*Footer, error) {
	return tt.Footer(ctx, f)
}

func (tt *testTable) readFragment(ctx context.Context, f Ref, schema *arrow.Schema, names []string, rowGroups []int, _ bool) (arrow.RecordBatch, error) {
	return tt.ReadRowGroups(ctx, f, Columns{Schema: schema, Names: names}, rowGroups)
}

func (tt *testTable) readRowsAt(ctx context.Context, f Ref, schema *arrow.Schema, names []string, rg int, offsets []int64) (arrow.RecordBatch, error) {
	return tt.ReadRowsAt(ctx, f, Columns{Schema: schema, Names: names}, rg, offsets)
}

func (tt *testTable) readRowRange(ctx context.Context, f Ref, schema *arrow.Schema, names []string, rg int, first, n int64) (arrow.RecordBatch, error) {
	return tt.ReadRowRange(ctx, f, Columns{Schema: schema, Names: names}, rg, first, n)
}

// readRowsFromPages reads runs of the flat columns names through the page path alone (ok=false:
// the page path cannot read them).
func (tt *testTable) readRowsFromPages(ctx context.Context, f Ref, _ readWindow, _ *rowGroupPages, schema *arrow.Schema, names []string, rg int, runs []rowRun) (arrow.RecordBatch, bool, error) {
	g, err := tt.newGroupRead(ctx, f, Columns{Schema: schema, Names: names}, rg)
	if err != nil {
		return nil, false, err
	}
	return g.readFromPages(ctx, names, runs)
}

// userColumns is the names of m's columns but _seq and _tombstone.
func userColumns(m *testManifest, _ []string) ([]string, error) {
	var out []string
	for _, f := range m.schema.Fields() {
		if f.Name != seqColumn && f.Name != tombstoneColumn {
			out = append(out, f.Name)
		}
	}
	return out, nil
}
