package table

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func TestUpsertNewestSeqWinsWithinTheBatchAndAgainstTheTable(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)

	res := upsertRows(t, tbl, mem, []row{
		{id: "a", value: 1, seq: 10}, {id: "b", value: 1, seq: 10},
		{id: "a", value: 2, seq: 12}, {id: "a", value: 3, seq: 11}, // a: seq 12 wins inside the batch
	})
	require.True(t, res.Committed)
	require.Equal(t, 2, res.Inserted)
	require.Equal(t, 2, res.Stale)

	res = upsertRows(t, tbl, mem, []row{
		{id: "a", value: 9, seq: 5},  // older than stored: dropped
		{id: "b", value: 7, seq: 20}, // newer: replaces
		{id: "c", value: 1, seq: 1},  // new
	})
	require.Equal(t, 1, res.Inserted)
	require.Equal(t, 1, res.Replaced)
	require.Equal(t, 1, res.Stale)

	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	rows := scanAll(t, tbl, m)
	require.Equal(t, []string{"a", "b", "c"}, sortedIDs(rows))
	require.EqualValues(t, 2, rows["a"].value)
	require.EqualValues(t, 7, rows["b"].value)
	require.EqualValues(t, 3, m.Version)
	require.EqualValues(t, 1, m.DeletedRows())
	require.NoError(t, tbl.Check(ctx, m))

	// Replaying the same batch is a no-op: nothing newer, nothing committed.
	res = upsertRows(t, tbl, mem, []row{{id: "b", value: 7, seq: 20}})
	require.False(t, res.Committed)
	require.Equal(t, 1, res.Stale)
}

func TestTombstonesHideKeysAndStopOlderWrites(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	upsertRows(t, tbl, mem, []row{{id: "a", value: 1, seq: 1}, {id: "b", value: 1, seq: 1}})
	upsertRows(t, tbl, mem, []row{{id: "a", seq: 5, tombstone: true}})
	upsertRows(t, tbl, mem, []row{{id: "a", value: 3, seq: 4}}) // older than the delete
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, sortedIDs(scanAll(t, tbl, m)))
	got, err := tbl.Get(ctx, m, "a", nil)
	require.NoError(t, err)
	require.Nil(t, got)

	upsertRows(t, tbl, mem, []row{{id: "a", value: 6, seq: 6}}) // newer than the delete
	m, _ = tbl.Latest(ctx)
	require.Equal(t, []string{"a", "b"}, sortedIDs(scanAll(t, tbl, m)))
	require.NoError(t, tbl.Check(ctx, m))
}

func TestGetReadsOneRowThroughTheIndex(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	var rows []row
	for i := range 40_000 {
		rows = append(rows, row{id: fmt.Sprintf("k%06d", i), value: int64(i), payload: "p", seq: 1})
	}
	upsertRows(t, tbl, mem, rows)
	_, err := tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	upsertRows(t, tbl, mem, []row{{id: "k020000", value: -1, payload: "new", seq: 2}})
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	require.True(t, m.IndexCoversAll())

	before := testutil.ToFloat64(tbl.metrics.UnindexedKeyScans)
	for _, c := range []struct {
		key  string
		want int64
	}{{"k000000", 0}, {"k039999", 39999}, {"k020000", -1}, {"k031234", 31234}} {
		rec, err := tbl.Get(ctx, m, c.key, []string{"value", "id"})
		require.NoError(t, err)
		require.NotNil(t, rec, c.key)
		require.EqualValues(t, 1, rec.NumRows())
		require.Equal(t, c.want, rec.Column(0).(*array.Int64).Value(0))
		require.Equal(t, c.key, rec.Column(1).(*array.String).Value(0))
		rec.Release()
	}
	rec, err := tbl.Get(ctx, m, "missing", nil)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.Equal(t, before, testutil.ToFloat64(tbl.metrics.UnindexedKeyScans), "a covering index never scans")
}

func TestUpsertWithoutAnIndexScansOnlyTheKeyColumnsAndCountsIt(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl := newTestTable(t, counting, mem)
	rng := rand.New(rand.NewPCG(7, 7))
	rows := numberedRows(2000, func(int) string { return randomLetters(rng, 4096) })
	upsertRows(t, tbl, mem, rows)
	m, _ := tbl.Latest(ctx)
	dataBytes := m.Bytes()

	before := counting.Stats()
	upsertRows(t, tbl, mem, []row{{id: "k00010", value: 1, seq: 2}})
	read := counting.Stats().Sub(before).ReadBytes
	require.EqualValues(t, 1, testutil.ToFloat64(tbl.metrics.UnindexedKeyScans))
	require.Less(t, read, dataBytes/4, "the fallback must not read payload columns (read %d of %d)", read, dataBytes)
}

// upsertScoredRow upserts one row with a nullable float64 column "score" the table may not have
// yet (an additive schema change).
func upsertScoredRow(t *testing.T, tbl *Table, mem memory.Allocator, id string, score float64, seq uint64) {
	b := array.NewRecordBuilder(mem, arrowSchemaWith(t, "score", true))
	b.Field(0).(*array.StringBuilder).Append(id)
	b.Field(1).(*array.Float64Builder).Append(score)
	b.Field(2).(*array.Uint64Builder).Append(seq)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	_, err := tbl.Upsert(context.Background(), rec, UpsertOptions{})
	require.NoError(t, err)
}

func TestAdditiveSchemaEvolution(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl := newTestTable(t, objstoretest.NewMemory(), mem)
	upsertRows(t, tbl, mem, []row{{id: "old", value: 1, seq: 1}})

	upsertScoredRow(t, tbl, mem, "new", 0.5, 2)

	m, _ := tbl.Latest(ctx)
	require.Len(t, m.Schema().FieldIndices("score"), 1)
	var scores []string
	require.NoError(t, tbl.Scan(ctx, m, ScanOptions{Columns: []string{"id", "score", "value"}}, func(r arrow.RecordBatch) error {
		for i := 0; i < int(r.NumRows()); i++ {
			s := "null"
			if r.Column(1).IsValid(i) {
				s = fmt.Sprint(r.Column(1).(*array.Float64).Value(i))
			}
			v := "null"
			if r.Column(2).IsValid(i) {
				v = fmt.Sprint(r.Column(2).(*array.Int64).Value(i))
			}
			scores = append(scores, r.Column(0).(*array.String).Value(i)+"="+s+"/"+v)
		}
		return nil
	}))
	require.ElementsMatch(t, []string{"old=null/1", "new=0.5/null"}, scores)

	// A non-null new column and a type change are rejected, and change nothing.
	for _, bad := range []struct {
		name     string
		nullable bool
	}{{"required", false}, {"value", true}} {
		b := array.NewRecordBuilder(mem, arrowSchemaWith(t, bad.name, bad.nullable))
		b.Field(0).(*array.StringBuilder).Append("x")
		b.Field(1).(*array.Float64Builder).Append(1)
		b.Field(2).(*array.Uint64Builder).Append(3)
		rec := b.NewRecordBatch()
		b.Release()
		_, err := tbl.Upsert(ctx, rec, UpsertOptions{})
		rec.Release()
		require.ErrorIs(t, err, ErrSchema, bad.name)
	}
	after, _ := tbl.Latest(ctx)
	require.Equal(t, m.Version, after.Version)
}

// arrowSchemaWith is {id, <name> float64, _seq}.
func arrowSchemaWith(t *testing.T, name string, nullable bool) *arrow.Schema {
	t.Helper()
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: nullable},
		{Name: SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
	}, nil)
}

// cachedIndexPages counts the decoded key-index pages tbl's cache holds for m's runs.
func cachedIndexPages(tbl *Table, m *Manifest) int {
	n := 0
	for _, seg := range m.KeyIndex.Runs {
		f, ok := cache.Get[*runFooter](tbl.cache, "index", seg.Path)
		if !ok {
			continue
		}
		for _, p := range f.pages.refs(0, f.pages.len()) {
			if _, ok := tbl.cachedPage(seg, p); ok {
				n++
			}
		}
	}
	return n
}

func TestMergeLookupsLeaveIndexPagesUncachedAndPointReadsCacheThem(t *testing.T) {
	// A cache too small to keep the run (an eighth of 1 MiB against a ~150 KiB run, decoded).
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl, err := Create(ctx, objstoretest.NewMemory(), testSchema, "id", Options{Allocator: mem, Cache: cache.New(1<<20, nil)})
	require.NoError(t, err)
	m := tenThousandIndexedRows(t, tbl, mem)
	require.Zero(t, cachedIndexPages(tbl, m))

	// A merge rewriting keys spread over ~100 pages reads each page once and keeps none.
	upsertRows(t, tbl, mem, everyNinetySeventhKey(2))
	m, err = tbl.Latest(ctx)
	require.NoError(t, err)
	require.Zero(t, cachedIndexPages(tbl, m), "a bulk lookup's pages must not fill a cache the run does not fit")

	// A point read caches the one page it reads, so the next read of a nearby key reads none.
	rec, err := tbl.Get(ctx, m, "k005001", []string{"value"})
	require.NoError(t, err)
	require.NotNil(t, rec)
	require.EqualValues(t, 5001, rec.Column(0).(*array.Int64).Value(0))
	rec.Release()
	require.Equal(t, 1, cachedIndexPages(tbl, m))
	// The rewritten rows are what the index now answers.
	rec, err = tbl.Get(ctx, m, "k000097", []string{"value"})
	require.NoError(t, err)
	require.NotNil(t, rec)
	require.EqualValues(t, -97, rec.Column(0).(*array.Int64).Value(0))
	rec.Release()
}

// A hot store whose index fits the cache (an eighth of it) keeps the pages its merges read: the
// next merge of the same keys reads no index bytes.
func TestMergeLookupsKeepTheIndexPagesOfARunTheCacheFits(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	count := objstoretest.NewCounting(objstoretest.NewMemory())
	tbl, err := Create(ctx, count, testSchema, "id", Options{Allocator: mem, Cache: cache.New(64<<20, nil)})
	require.NoError(t, err)
	m := tenThousandIndexedRows(t, tbl, mem)
	keys := make([]string, 0, 104)
	for _, r := range everyNinetySeventhKey(2) {
		keys = append(keys, r.id)
	}
	_, err = tbl.indexLookup(ctx, m, keys)
	require.NoError(t, err)
	require.Greater(t, cachedIndexPages(tbl, m), 90, "the pages of ~100 keys spread over the run stay")
	before := count.Stats()
	found, err := tbl.indexLookup(ctx, m, keys)
	require.NoError(t, err)
	require.Len(t, found, len(keys))
	require.Zero(t, count.Stats().Sub(before).Reads, "the next lookup of the same keys reads nothing")
}

// tenThousandIndexedRows fills tbl with keys k000000..k009999 and indexes them.
func tenThousandIndexedRows(t *testing.T, tbl *Table, mem memory.Allocator) *Manifest {
	var rows []row
	for i := range 10_000 {
		rows = append(rows, row{id: fmt.Sprintf("k%06d", i), value: int64(i), payload: "p", seq: 1})
	}
	upsertRows(t, tbl, mem, rows)
	_, err := tbl.BuildKeyIndex(context.Background())
	require.NoError(t, err)
	m, err := tbl.Latest(context.Background())
	require.NoError(t, err)
	return m
}

// everyNinetySeventhKey rewrites every 97th key of tenThousandIndexedRows at seq.
func everyNinetySeventhKey(seq uint64) []row {
	var rewrite []row
	for i := 0; i < 10_000; i += 97 {
		rewrite = append(rewrite, row{id: fmt.Sprintf("k%06d", i), value: -int64(i), payload: "q", seq: seq})
	}
	return rewrite
}

// newestPerKey against the rule it replaces, on random batches with many repeats and ties:
// for each distinct key (in order), the newest _seq, the later row on a tie; every other row
// counts as stale.
func TestNewestPerKeyPicksTheNewestSeqAndTheLaterRowOnATie(t *testing.T) {
	mem := checkedAlloc(t)
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		n := rng.IntN(300)
		kb, sb := array.NewStringBuilder(mem), array.NewUint64Builder(mem)
		ids, seqs := make([]string, n), make([]uint64, n)
		for i := range n {
			ids[i], seqs[i] = fmt.Sprintf("k%03d", rng.IntN(1+n/3)), uint64(rng.IntN(5)) // ties are common
			kb.Append(ids[i])
			sb.Append(seqs[i])
		}
		keys, seqArr := kb.NewStringArray(), sb.NewUint64Array()
		kb.Release()
		sb.Release()

		want, wantStale := map[string]int{}, 0
		for i, k := range ids {
			if j, ok := want[k]; ok {
				wantStale++
				if seqs[j] > seqs[i] {
					continue
				}
			}
			want[k] = i
		}
		sorted, rows, stale := newestPerKey(keys, seqArr)
		require.Equal(t, wantStale, stale, "trial %d", trial)
		require.Len(t, sorted, len(want), "trial %d", trial)
		require.True(t, slices.IsSorted(sorted), "trial %d", trial)
		for i, k := range sorted {
			require.Equal(t, want[k], rows[i], "trial %d key %s", trial, k)
		}
		keys.Release()
		seqArr.Release()
	}
}

// Manifests read from the store share one decoded schema while their fields are the same (a
// retained version would otherwise hold its own copy, and the projected schemas keyed by it
// would pile up with every commit); a version with new fields gets its own.
func TestManifestsOfOneSchemaShareItsDecodedForm(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	writer := newTestTable(t, store, mem)
	for i := range 5 {
		upsertRows(t, writer, mem, []row{{id: fmt.Sprintf("k%d", i), value: int64(i), seq: uint64(i + 1)}})
	}
	reader := newTestTable(t, store, mem) // its own cache: every version is read and decoded
	latest, err := reader.Latest(ctx)
	require.NoError(t, err)
	first, err := reader.Version(ctx, 2)
	require.NoError(t, err)
	for v := uint64(3); v <= latest.Version; v++ {
		m, err := reader.Version(ctx, v)
		require.NoError(t, err)
		require.Same(t, first.Schema(), m.Schema(), "version %d", v)
		got, err := reader.Get(ctx, m, "k1", []string{"id", "value"})
		require.NoError(t, err)
		require.EqualValues(t, 1, got.NumRows())
		got.Release()
	}
	require.Equal(t, 1, reader.projected.TableSchemas(), "one table schema keys the projections of every version")

	upsertScoredRow(t, writer, mem, "new", 0.5, 10)
	evolved, err := reader.Latest(ctx)
	require.NoError(t, err)
	require.NotSame(t, first.Schema(), evolved.Schema())
	require.Len(t, evolved.Schema().FieldIndices("score"), 1)
	fresh := newTestTable(t, store, mem) // decodes the evolved version first, then an old one
	_, err = fresh.Latest(ctx)
	require.NoError(t, err)
	old, err := fresh.Version(ctx, 2)
	require.NoError(t, err)
	require.Empty(t, old.Schema().FieldIndices("score"), "an older version keeps its own fields")
}
