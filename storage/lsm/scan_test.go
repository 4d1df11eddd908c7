package lsm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/predicate"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

// scanAll pages through s with the given page size and filters, returning id -> value.
func scanAll(t *testing.T, s *Store, pageSize int, filters map[string]any) ([]string, map[string]int64) {
	t.Helper()
	var order []string
	got := map[string]int64{}
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10_000)
		page, err := s.Scan(context.Background(), ScanOptions{Columns: []string{"value", "id"}, After: after, Limit: pageSize, Filters: filters})
		require.NoError(t, err)
		require.LessOrEqual(t, int(page.Rows.NumRows()), pageSize)
		vals := page.Rows.Column(0).(*array.Int64)
		keys := page.Rows.Column(1).(*array.String)
		for i := 0; i < keys.Len(); i++ {
			order = append(order, keys.Value(i))
			got[keys.Value(i)] = vals.Value(i)
		}
		page.Rows.Release()
		if page.Next == "" {
			return order, got
		}
		after = page.Next
	}
}

// A randomized model of the whole engine: appends and deletes through two shards, seals, merges
// in either order, index builds and compactions; after every step the WAL invariant checker
// passes, and every tenth step point reads and paginated scans (with and without filters) must
// match the model.
func TestRandomizedLSMModel(t *testing.T) {
	steps := 300
	if testing.Short() || testStorage != "" {
		steps = 80 // on an object store every step costs round trips
	}
	runLSMModel(t, objstoretest.NewMemory(), steps)
}

// The same model against a real S3 server: the WAL in entry objects (S3 cannot write in place).
// (A run of the package on an object store runs TestRandomizedLSMModel there instead.)
func TestRandomizedLSMModelOnS3(t *testing.T) {
	if testStorage != "" {
		t.Skipf("TestRandomizedLSMModel runs on %s in this run", testStorage)
	}
	s, err := objstore.Open(context.Background(), testenv.S3(t))
	require.NoError(t, err)
	runLSMModel(t, s, 60)
}

func runLSMModel(t *testing.T, objects objstore.Store, steps int) {
	rng := rand.New(rand.NewPCG(11, 12))
	e := newEnv(t, objects)
	writers := []*Store{e.open("w0"), e.open("w1")}
	reader := e.open("reader")
	model := map[string]int64{}
	ctx := context.Background()
	for step := range steps {
		w := writers[rng.IntN(2)]
		switch op := rng.IntN(10); {
		case op < 5:
			n := 1 + rng.IntN(8)
			var keys []string
			for range n {
				keys = append(keys, fmt.Sprintf("k%03d", rng.IntN(120)))
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			v := int64(step)
			appendIDs(t, w, e.mem, v, keys...)
			for _, k := range keys {
				model[k] = v
			}
		case op < 6:
			k := fmt.Sprintf("k%03d", rng.IntN(120))
			_, err := w.Delete(ctx, []string{k})
			require.NoError(t, err)
			delete(model, k)
		case op < 8:
			require.NoError(t, w.Flush(ctx))
		case op < 9:
			_, err := reader.MergeShard(ctx, writers[rng.IntN(2)].Shard(), MergeOptions{MaxGenerations: 1 + rng.IntN(4)})
			require.NoError(t, err)
		default:
			if rng.IntN(2) == 0 {
				_, err := reader.tbl.BuildKeyIndex(ctx)
				require.NoError(t, err)
			} else {
				_, err := reader.tbl.Compact(ctx, table.CompactionConfig{MinFragments: 2})
				require.NoError(t, err)
			}
		}
		// The WAL's invariants hold after every step, in both shards.
		for _, w := range writers {
			require.NoError(t, shard.Check(ctx, e.objects, w.Shard()), "step %d", step)
		}
		if step%10 != 9 {
			continue
		}
		// Every writer's rows are visible everywhere once both have flushed.
		for _, w := range writers {
			require.NoError(t, w.Flush(ctx))
		}
		// Half the checks read through a writer holding fresh unsealed rows (its memtable is a
		// source of the scan too).
		scanner := reader
		if rng.IntN(2) == 0 {
			scanner = writers[0]
			var keys []string
			for range 1 + rng.IntN(6) {
				keys = append(keys, fmt.Sprintf("k%03d", rng.IntN(120)))
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			appendIDs(t, scanner, e.mem, int64(step), keys...)
			for _, k := range keys {
				model[k] = int64(step)
			}
		}
		wantKeys := make([]string, 0, len(model))
		for k := range model {
			wantKeys = append(wantKeys, k)
		}
		slices.Sort(wantKeys)
		order, got := scanAll(t, scanner, 1+rng.IntN(30), nil)
		require.Equal(t, wantKeys, order, "step %d", step)
		require.Equal(t, model, got, "step %d", step)
		for _, k := range wantKeys[:min(5, len(wantKeys))] {
			require.Equal(t, model[k], value(t, scanner, k))
		}
		// A snapshot scan (what SQL reads) streams the same rows in the same order.
		snapOrder, snapGot := snapshotScanAll(t, scanner, SnapshotScanOptions{})
		require.Equal(t, wantKeys, snapOrder, "step %d", step)
		require.Equal(t, model, snapGot, "step %d", step)
		// A filter applies to the newest version of each key only.
		if len(wantKeys) > 0 {
			v := model[wantKeys[rng.IntN(len(wantKeys))]]
			_, filtered := scanAll(t, scanner, 7, map[string]any{"value": v})
			for k, fv := range filtered {
				require.Equal(t, v, fv)
				require.Equal(t, v, model[k])
			}
			n := 0
			for _, mv := range model {
				if mv == v {
					n++
				}
			}
			require.Len(t, filtered, n)
		}
	}
	checkTable(t, reader)
}

func TestScanRejectsBadFiltersAndColumns(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("a")
	for _, opts := range []ScanOptions{
		{Filters: map[string]any{"nope": "x"}},
		{Filters: map[string]any{"value": "not a number"}},
		{Filters: map[string]any{"_seq": 1}},
		{Columns: []string{"missing"}},
	} {
		_, err := s.Scan(context.Background(), opts)
		require.ErrorIs(t, err, table.ErrSchema, "%+v", opts)
	}
	page, err := s.Scan(context.Background(), ScanOptions{})
	require.NoError(t, err)
	require.Zero(t, page.Rows.NumRows())
	require.Empty(t, page.Next)
	page.Rows.Release()
}

func TestCheckoutReadsAnOldVersionWithoutTheWAL(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("a")
	ctx := context.Background()
	appendIDs(t, s, e.mem, 1, "x", "y")
	require.NoError(t, s.Flush(ctx))
	_, err := s.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	m, err := s.tbl.Latest(ctx)
	require.NoError(t, err)
	old := m.Version
	appendIDs(t, s, e.mem, 2, "x", "z")
	require.NoError(t, s.Flush(ctx))
	_, err = s.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	appendIDs(t, s, e.mem, 3, "w") // in the memtable only

	page, err := s.Scan(ctx, ScanOptions{Columns: []string{"id", "value"}, Version: old})
	require.NoError(t, err)
	defer page.Rows.Release()
	require.EqualValues(t, 2, page.Rows.NumRows())
	require.Equal(t, int64(1), page.Rows.Column(1).(*array.Int64).Value(0))
	rec, err := s.GetAt(ctx, old, "x", []string{"value"})
	require.NoError(t, err)
	require.EqualValues(t, 1, rec.Column(0).(*array.Int64).Value(0))
	rec.Release()
	rec, err = s.GetAt(ctx, old, "w", nil)
	require.NoError(t, err)
	require.Nil(t, rec, "a checkout excludes the WAL")
	require.EqualValues(t, 3, value(t, s, "w"), "the live view still sees it")
	_, err = s.GetAt(ctx, 999, "x", nil)
	require.ErrorIs(t, err, table.ErrNotFound)
}

// A page that needs several chunks of base keys (a selective filter over more keys than a
// chunk) still sees the pending generations' and the memtable's newer rows in every chunk.
func TestScanChunksSeePendingRowsPastTheFirstChunk(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	w := e.open("w0")
	all := ids("k", 1000)
	appendIDs(t, w, e.mem, 0, all...)
	require.NoError(t, w.Flush(ctx))
	_, err := w.Merge(ctx, MergeOptions{MaxGenerations: -1, MaxBytes: -1}, 10)
	require.NoError(t, err)
	_, err = w.BuildKeyIndex(ctx)
	require.NoError(t, err)
	want := map[string]int64{}
	var sealed, fresh []string
	for i := 0; i < len(all); i += 37 {
		if i%2 == 0 {
			sealed = append(sealed, all[i])
		} else {
			fresh = append(fresh, all[i])
		}
		want[all[i]] = 1
	}
	appendIDs(t, w, e.mem, 1, sealed...) // a pending generation
	require.NoError(t, w.Flush(ctx))
	appendIDs(t, w, e.mem, 1, fresh...) // the memtable
	for _, pageSize := range []int{5, 100} {
		_, got := scanAll(t, w, pageSize, map[string]any{"value": int64(1)})
		require.Equal(t, want, got, "page size %d", pageSize)
	}
}

// A page reads the rows it returns, not every pending row of its chunk: 5,000 unsealed rows of
// 16 KB, a page of 10 allocates a small fraction of the 80 MB they hold.
func TestScanPageReadsOnlyTheRowsItReturns(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	w := e.open("w0", func(o *Options) { o.Writer.SealRows, o.Writer.SealBytes = 1<<20, 1<<30 })
	rb := payloadRows(5000, 0, strings.Repeat("p", 16<<10))
	rec := rb.NewRecordBatch()
	rb.Release()
	_, err := w.Append(ctx, rec)
	rec.Release()
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	page, err := w.Scan(ctx, ScanOptions{Limit: 10})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	defer page.Rows.Release()
	require.EqualValues(t, 10, page.Rows.NumRows())
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated by one page of 10 rows")
}

// A filter on a clustered column reads the row groups that may hold its value: row-group
// statistics rule the others out before their rows are read. (Both scans are measured with the
// caches warm: a listing reads only the pages of its rows, so the first scan's footers and
// indexes would outweigh the rows.)
func TestFilteredScanSkipsRowGroupsStatisticsRuleOut(t *testing.T) {
	ctx := context.Background()
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	e := newEnv(t, counting)
	w := e.open("w0")
	rng := rand.New(rand.NewPCG(5, 5))
	payload := make([]byte, 1000) // random letters: compresses little, as real payloads
	for v := range 10 {           // 2,000 rows per value, in key order
		b := array.NewRecordBuilder(e.mem, userSchema)
		for i := range 2000 {
			for j := range payload {
				payload[j] = byte('a' + rng.IntN(26))
			}
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("k%06d", v*2000+i))
			b.Field(1).(*array.Int64Builder).Append(int64(v))
			b.Field(2).(*array.StringBuilder).Append(string(payload))
		}
		rec := b.NewRecordBatch()
		b.Release()
		_, err := w.Append(ctx, rec)
		rec.Release()
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush(ctx))
	_, err := w.Merge(ctx, MergeOptions{MaxGenerations: -1, MaxBytes: -1}, 10)
	require.NoError(t, err)
	_, err = w.BuildKeyIndex(ctx)
	require.NoError(t, err)

	scanAll(t, w, 500, nil) // footers, page and key indexes cached: what follows reads rows only
	before := counting.Stats()
	_, got := scanAll(t, w, 500, map[string]any{"value": int64(3)})
	filtered := counting.Stats().Sub(before).ReadBytes
	require.Len(t, got, 2000)
	for k, v := range got {
		require.EqualValues(t, 3, v, k)
	}
	before = counting.Stats()
	_, all := scanAll(t, w, 500, nil)
	unfiltered := counting.Stats().Sub(before).ReadBytes
	require.Len(t, all, 20_000)
	t.Logf("a filtered scan reads %d bytes, a full one %d", filtered, unfiltered)
	require.Less(t, filtered, unfiltered/3, "a filtered scan reads %d bytes, a full one %d", filtered, unfiltered)
}

// A bounded scan (After, Before) returns exactly the keys of its range from every layer — base
// table, pending generation, memtable — at any page size, and no key past its end.
func TestScanOfAKeyRangeStopsAtItsEnd(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	w := e.open("w0")
	var base, pending, fresh []string
	for i := range 300 {
		k := fmt.Sprintf("k%03d", i)
		switch i % 3 {
		case 0:
			base = append(base, k)
		case 1:
			pending = append(pending, k)
		default:
			fresh = append(fresh, k)
		}
	}
	appendIDs(t, w, e.mem, 0, base...)
	require.NoError(t, w.Flush(ctx))
	_, err := w.Merge(ctx, MergeOptions{MaxGenerations: -1, MaxBytes: -1}, 10)
	require.NoError(t, err)
	_, err = w.BuildKeyIndex(ctx)
	require.NoError(t, err)
	appendIDs(t, w, e.mem, 1, pending...)
	require.NoError(t, w.Flush(ctx))
	appendIDs(t, w, e.mem, 2, fresh...)

	for _, r := range []struct{ after, before string }{{"k100", "k200"}, {"k0", "k1"}, {"k2999", "k3"}, {"", "k005"}, {"k150", "k150\x00"}} {
		var want []string
		for i := range 300 {
			if k := fmt.Sprintf("k%03d", i); k > r.after && k < r.before {
				want = append(want, k)
			}
		}
		for _, pageSize := range []int{1, 7, 1000} {
			var got []string
			after := r.after
			for pages := 0; ; pages++ {
				require.Less(t, pages, 1000)
				page, err := w.Scan(ctx, ScanOptions{Columns: []string{"id"}, After: after, Before: r.before, Limit: pageSize})
				require.NoError(t, err)
				keys := page.Rows.Column(0).(*array.String)
				for i := 0; i < keys.Len(); i++ {
					got = append(got, keys.Value(i))
				}
				page.Rows.Release()
				if page.Next == "" {
					break
				}
				after = page.Next
			}
			require.Equal(t, want, got, "range (%q, %q) page size %d", r.after, r.before, pageSize)
		}
	}
}

func scanWhere(t *testing.T, s *Store, pageSize int, where predicate.Expr) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10_000)
		page, err := s.Scan(context.Background(), ScanOptions{Columns: []string{"value", "id"}, After: after, Limit: pageSize, Where: where})
		require.NoError(t, err)
		vals := page.Rows.Column(0).(*array.Int64)
		keys := page.Rows.Column(1).(*array.String)
		for i := 0; i < keys.Len(); i++ {
			got[keys.Value(i)] = vals.Value(i)
		}
		page.Rows.Release()
		if page.Next == "" {
			return got
		}
		after = page.Next
	}
}

// A SQL predicate selects the same rows from every layer (base table, pending generation,
// memtable) as evaluating it row by row, and a selective one skips the row groups their
// statistics rule out.
func TestWhereScansSelectFromEveryLayerAndSkipRowGroups(t *testing.T) {
	ctx := context.Background()
	counting := objstoretest.NewCounting(objstoretest.NewMemory())
	e := newEnv(t, counting)
	w := e.open("w0")
	rng := rand.New(rand.NewPCG(6, 6))
	payload := make([]byte, 1000)
	for v := range 10 { // 1,000 rows per value, in key order
		b := array.NewRecordBuilder(e.mem, userSchema)
		for i := range 1000 {
			for j := range payload {
				payload[j] = byte('a' + rng.IntN(26))
			}
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("k%06d", v*1000+i))
			b.Field(1).(*array.Int64Builder).Append(int64(v))
			b.Field(2).(*array.StringBuilder).Append(string(payload))
		}
		rec := b.NewRecordBatch()
		b.Release()
		_, err := w.Append(ctx, rec)
		rec.Release()
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush(ctx))
	_, err := w.Merge(ctx, MergeOptions{MaxGenerations: -1, MaxBytes: -1}, 10)
	require.NoError(t, err)
	_, err = w.BuildKeyIndex(ctx)
	require.NoError(t, err)
	want := map[string]int64{}
	for i := range 10_000 {
		want[fmt.Sprintf("k%06d", i)] = int64(i / 1000)
	}
	// Rewrites in a pending generation and in the memtable move rows into and out of the match.
	appendIDs(t, w, e.mem, 3, "k000001", "k009999") // pending: now value 3
	require.NoError(t, w.Flush(ctx))
	appendIDs(t, w, e.mem, 42, "k003000") // memtable: no longer 3
	want["k000001"], want["k009999"], want["k003000"] = 3, 3, 42

	schema := arrow.NewSchema(userSchema.Fields(), nil)
	for _, sql := range []string{"value = 3", "value = 3 OR value >= 42", "value BETWEEN 2 AND 3 AND NOT id LIKE 'k0020%'", "id IN ('k000001', 'k003000')"} {
		where, err := predicate.Parse(sql, schema)
		require.NoError(t, err)
		wantSel := map[string]int64{}
		for k, v := range want {
			keep := map[string]bool{
				"value = 3":                v == 3,
				"value = 3 OR value >= 42": v == 3 || v >= 42,
				"value BETWEEN 2 AND 3 AND NOT id LIKE 'k0020%'": v >= 2 && v <= 3 && !strings.HasPrefix(k, "k0020"),
				"id IN ('k000001', 'k003000')":                   k == "k000001" || k == "k003000",
			}[sql]
			if keep {
				wantSel[k] = v
			}
		}
		for _, pageSize := range []int{7, 500} {
			require.Equal(t, wantSel, scanWhere(t, w, pageSize, where), "%s, page size %d", sql, pageSize)
		}
	}
	three, err := predicate.Parse("value = 3", schema)
	require.NoError(t, err)
	before := counting.Stats()
	scanWhere(t, w, 500, three)
	filtered := counting.Stats().Sub(before).ReadBytes
	before = counting.Stats()
	scanWhere(t, w, 500, nil)
	unfiltered := counting.Stats().Sub(before).ReadBytes
	require.Less(t, filtered, unfiltered/3, "a selective predicate reads %d bytes, a full scan %d", filtered, unfiltered)
}
