package table

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

	"github.com/strata-store/strata/storage/objstore"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// row is one test row: the model a table is checked against.
type row struct {
	id        string
	value     int64
	payload   string
	seq       uint64
	tombstone bool
}

// randomLetters is n random lowercase letters: a payload that compresses little, so that it
// dominates a fragment's bytes as real payloads do.
func randomLetters(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

// numberedRows is n rows with ids k00000, k00001, ... in order, row i holding value i, seq 1 and
// payload(i) (called in row order, so a payload drawn from an rng is the same each run).
func numberedRows(n int, payload func(i int) string) []row {
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{id: fmt.Sprintf("k%05d", i), value: int64(i), payload: payload(i), seq: 1}
	}
	return rows
}

// checkedAlloc returns an allocator that fails the test if anything leaks.
func checkedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func newTestTable(t testing.TB, store objstore.Store, mem memory.Allocator) *Table {
	tbl, err := Create(context.Background(), store, testSchema, "id", Options{Allocator: mem})
	require.NoError(t, err)
	return tbl
}

// batch builds an upsert batch from rows.
func batch(mem memory.Allocator, rows []row) arrow.RecordBatch {
	schema := arrow.NewSchema(append(testSchema.Fields(),
		arrow.Field{Name: SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean}), nil)
	b := array.NewRecordBuilder(mem, schema)
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

func upsertRows(t testing.TB, tbl *Table, mem memory.Allocator, rows []row) UpsertResult {
	t.Helper()
	rec := batch(mem, rows)
	defer rec.Release()
	res, err := tbl.Upsert(context.Background(), rec, UpsertOptions{})
	require.NoError(t, err)
	return res
}

// upsertAddingFragment upserts rec with opts and returns the fragment the upsert added (fatal when
// it added none).
func upsertAddingFragment(t testing.TB, tbl *Table, rec arrow.RecordBatch, opts UpsertOptions) Fragment {
	t.Helper()
	before, err := tbl.Latest(context.Background())
	require.NoError(t, err)
	res, err := tbl.Upsert(context.Background(), rec, opts)
	require.NoError(t, err)
	for _, f := range res.Manifest.Fragments {
		if _, old := before.Fragment(f.ID); !old {
			return f
		}
	}
	t.Fatal("the upsert added no fragment")
	return Fragment{}
}

// scanAll returns every live row of m by id.
func scanAll(t testing.TB, tbl *Table, m *Manifest) map[string]row {
	t.Helper()
	out := map[string]row{}
	err := tbl.Scan(context.Background(), m, ScanOptions{Columns: []string{"id", "value", "payload"}, IncludeInternal: true}, func(rec arrow.RecordBatch) error {
		ids := rec.Column(0).(*array.String)
		vals := rec.Column(1).(*array.Int64)
		pays := rec.Column(2).(*array.String)
		seqs := rec.Column(3).(*array.Uint64)
		tombs := rec.Column(4).(*array.Boolean)
		for i := 0; i < int(rec.NumRows()); i++ {
			if tombs.Value(i) {
				continue
			}
			id := ids.Value(i)
			if _, dup := out[id]; dup {
				return fmt.Errorf("id %q scanned twice", id)
			}
			out[id] = row{id: id, value: vals.Value(i), payload: pays.Value(i), seq: seqs.Value(i)}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func sortedIDs(m map[string]row) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func sortEntries(e []indexEntry) {
	sort.Slice(e, func(i, j int) bool { return e[i].Key < e[j].Key })
}

// skipUnderRace skips a test whose cost is its data volume — memory bounds measured over
// hundreds of megabytes, or a model's hundreds of object-store round trips — under the race
// detector, which makes it several times slower and adds nothing the smaller tests of the same
// code do not catch. `make test` runs this package once more without the race detector, where
// these tests run (scripts/test-second-pass.sh).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("heavy: runs in make test's pass without the race detector")
	}
}
