// Nearest-row reads: the rows of a store whose vector column is nearest to a query, across every
// source a read sees — this process's memtables and every shard's pending generations, compared
// exactly, and the base table through its fragments' vector indexes (table.NearestRows) — with
// the newest version of each key winning as everywhere else: a base row whose key has a newer
// pending version (or tombstone) is never answered, nor is a pending version older than the base
// row of its key. So a row is searchable from the moment a read can see it.
package lsm

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/fragment"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storage/vecindex"
)

// NearestQuery asks for the rows nearest to a vector.
type NearestQuery struct {
	Column string // a list<float32> column
	Metric vecindex.Metric
	Query  []float32
	K      int
	// Columns are the columns to answer (every user column when empty).
	Columns []string
	// Before, when set, limits the read to keys below it.
	Before string
}

// NearestResult is a nearest-row read's answer.
type NearestResult struct {
	// Rows are the K nearest live rows (fewer when the store has fewer), nearest first (ties: the
	// smaller key), with the asked columns. The caller releases them.
	Rows arrow.RecordBatch
	// Distances[i] is row i's distance from the query under the metric.
	Distances []float32
	// Vectors[i] is row i's vector (read only: it may be shared with a vector index), so that a
	// caller need not read the vector column among Columns.
	Vectors [][]float32
	// Exhausted: no other row of the store holds a vector of the query's length (a larger K
	// answers nothing more).
	Exhausted bool
}

// Nearest answers the K rows nearest to q.Query. Pending rows are compared exactly; base-table
// rows through the fragments' vector indexes where they have one (approximate) and exactly where
// they do not.
func (s *Store) Nearest(ctx context.Context, q NearestQuery) (NearestResult, error) {
	names, err := s.columns(q.Columns)
	if err != nil {
		return NearestResult{}, err
	}
	if len(s.schema.FieldIndices(q.Column)) == 0 {
		return NearestResult{}, fmt.Errorf("%w: no column %q", table.ErrSchema, q.Column)
	}
	if q.K <= 0 {
		q.K = 10
	}
	return readFresh(ctx, s, func() (NearestResult, error) { return s.nearestOnce(ctx, q, names) })
}

// scored is a candidate version, its distance and (when known) its vector.
type scored struct {
	v   version
	d   float32
	vec []float32
}

func (s *Store) nearestOnce(ctx context.Context, q NearestQuery, names []string) (NearestResult, error) {
	r, err := s.openSearchRead(ctx, q.Before)
	if err != nil {
		return NearestResult{}, err
	}
	defer r.release()
	snap, pending, genRows := r.snap, r.pending, r.rows

	// Pending candidates, compared exactly: a generation's vectors decoded once and cached (it is
	// immutable) and compared with the query in one pass, the memtable's gathered once a slice
	// at a time. Only the nearest few are kept (a bounded heap), in order.
	var memLive []version
	pending.each(func(v version) {
		if v.src == sourceMemtable && !v.tomb {
			memLive = append(memLive, v)
		}
	})
	qNorm := vecindex.Norm(q.Query)
	memCands, err := s.memtableCandidates(ctx, snap, q, qNorm, memLive, genRows)
	if err != nil {
		return NearestResult{}, err
	}
	genDists := map[*genView][]float32{}
	genVecs := map[*genView]*genVectors{}
	eachCandidate := func(fn func(scored)) error {
		var err error
		pending.each(func(v version) {
			if err != nil || v.tomb || v.src != sourceGeneration {
				return
			}
			gv := genVecs[v.gen]
			if gv == nil {
				if gv, err = s.generationVectors(ctx, snap, v.gen, q.Column, genRows); err != nil {
					return
				}
				genVecs[v.gen] = gv
				genDists[v.gen] = gv.distances(q.Metric, q.Query, qNorm)
			}
			if d := genDists[v.gen][v.row]; d == d { // not NaN: a vector of the query's length
				fn(scored{v: v, d: d, vec: gv.vecs[v.row]})
			}
		})
		for _, c := range memCands {
			fn(c)
		}
		return err
	}
	top := &scoredTop{n: 2*q.K + 16}
	all := 0
	if err := eachCandidate(func(c scored) { all++; top.offer(c) }); err != nil {
		return NearestResult{}, err
	}
	// A pending version older than the base row of its key is not the key's newest: drop it,
	// checking the nearest first; only when too many of them are stale are the others sorted.
	best := top.sorted()
	walCands, err := s.dropStale(ctx, snap, best, q.K)
	if err != nil {
		return NearestResult{}, err
	}
	if len(walCands) < q.K && len(best) < all {
		kept := make(map[string]bool, len(best))
		for _, c := range best {
			kept[c.v.key] = true
		}
		var rest []scored
		if err := eachCandidate(func(c scored) {
			if !kept[c.v.key] {
				rest = append(rest, c)
			}
		}); err != nil {
			return NearestResult{}, err
		}
		sortScored(rest)
		more, err := s.dropStale(ctx, snap, rest, q.K-len(walCands))
		if err != nil {
			return NearestResult{}, err
		}
		walCands = append(walCands, more...)
	}
	walCut := len(walCands) < all && len(walCands) >= q.K // unchecked candidates were left out

	// Base candidates: the table's nearest rows whose key has no newer pending version.
	baseHits, baseExhausted, err := s.tbl.NearestRows(ctx, snap.Table, table.VectorQuery{Column: q.Column, Metric: q.Metric, Query: q.Query, K: q.K,
		Skip: func(key string, seq uint64) bool {
			if q.Before != "" && key >= q.Before {
				return true
			}
			p, ok := pending.get(key)
			return ok && p.seq > seq
		}})
	if err != nil {
		return NearestResult{}, err
	}
	merged := make([]scored, 0, len(walCands)+len(baseHits))
	merged = append(merged, walCands...)
	for _, h := range baseHits {
		merged = append(merged, scored{v: tableVersion(h.Ref), d: h.Distance, vec: h.Vector})
	}
	sortScored(merged)
	exhausted := baseExhausted && !walCut && len(merged) <= q.K
	if len(merged) > q.K {
		merged = merged[:q.K]
	}
	versions := make([]version, len(merged))
	out := NearestResult{Distances: make([]float32, len(merged)), Vectors: make([][]float32, len(merged)), Exhausted: exhausted}
	var unknown []int // rows an exact scan of the base answered: their vectors are read below
	for i, c := range merged {
		versions[i], out.Distances[i], out.Vectors[i] = c.v, c.d, c.vec
		if c.vec == nil {
			unknown = append(unknown, i)
		}
	}
	vecReader := newPageBuilder(s, []string{q.Column}, []string{q.Column})
	defer vecReader.release()
	for start := 0; start < len(unknown); start += nearestPointRows {
		idx := unknown[start:min(start+nearestPointRows, len(unknown))]
		part := make([]version, len(idx))
		for j, i := range idx {
			part[j] = versions[i]
		}
		rec, err := vecReader.gather(ctx, snap, part, genRows)
		if err != nil {
			return NearestResult{}, err
		}
		err = eachVector(rec.Column(0), func(j int, v []float32) { out.Vectors[idx[j]] = slices.Clone(v) })
		rec.Release()
		if err != nil {
			return NearestResult{}, err
		}
	}
	if out.Rows, err = s.answerRows(ctx, snap, versions, names, genRows); err != nil {
		return NearestResult{}, err
	}
	return out, nil
}

// nearestPointRows is how many rows of a nearest read's answer are read at once (see
// fragment.PointReadRows).
const nearestPointRows = fragment.PointReadRows

// genVectors is a pending generation's vectors of one column and their norms, by key-file
// position (nil for a tombstone or a null vector), the vectors laid out back to back in key-file
// order so that comparing a query with all of them streams through memory. Shared through the
// cache: never modified.
type genVectors struct {
	vecs  [][]float32
	norms []float32
}

// distances is every vector's distance from query (qNorm its norm) under metric, by key-file
// position; NaN where there is no vector of the query's length.
func (gv *genVectors) distances(metric vecindex.Metric, query []float32, qNorm float32) []float32 {
	out := make([]float32, len(gv.vecs))
	for i, v := range gv.vecs {
		if len(v) != len(query) {
			out[i] = float32(math.NaN())
			continue
		}
		out[i] = metric.DistanceNorms(query, qNorm, v, gv.norms[i])
	}
	return out
}

// generationVectors is g's vectors of column, from the cache or read (every row of the
// generation, a slice at a time) and cached.
func (s *Store) generationVectors(ctx context.Context, snap *Snapshot, g *genView, column string, genRows *shard.RowReader) (*genVectors, error) {
	key := fmt.Sprintf("%s/%d/%s", g.shard, g.gen.Gen, column)
	if gv, ok := cache.Get[*genVectors](s.pendingCache, "generation_vectors", key); ok {
		return gv, nil
	}
	n := len(g.keys.Keys)
	gv := &genVectors{vecs: make([][]float32, n), norms: make([]float32, n)}
	var versions []version
	for i := 0; i < n; i++ {
		if !g.keys.Tombs[i] {
			versions = append(versions, generationVersion(g, i))
		}
	}
	reader := newPageBuilder(s, []string{column}, []string{column})
	defer reader.release()
	var flat []float32
	type span struct{ row, at, n int }
	var spans []span
	for start := 0; start < len(versions); start += nearestGatherRows {
		part := versions[start:min(start+nearestGatherRows, len(versions))]
		rec, err := reader.gather(ctx, snap, part, genRows)
		if err != nil {
			return nil, err
		}
		err = eachVector(rec.Column(0), func(j int, v []float32) {
			spans = append(spans, span{int(part[j].row), len(flat), len(v)})
			flat = append(flat, v...)
			gv.norms[part[j].row] = vecindex.Norm(v)
		})
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	flat = slices.Clip(flat)
	for _, sp := range spans {
		gv.vecs[sp.row] = flat[sp.at : sp.at+sp.n : sp.at+sp.n]
	}
	cache.Add(s.pendingCache, "generation_vectors", key, gv, int64(28*n+4*len(flat)+64))
	return gv, nil
}

// nearestGatherRows is how many pending rows' vectors a nearest read gathers at once.
const nearestGatherRows = 4096

func compareScored(a, b scored) int {
	switch {
	case a.d < b.d:
		return -1
	case a.d > b.d:
		return 1
	}
	return strings.Compare(a.v.key, b.v.key)
}

func sortScored(cs []scored) { slices.SortFunc(cs, compareScored) }

// scoredTop keeps the n nearest candidates offered (ties: the smaller key): a max-heap.
type scoredTop struct {
	n int
	h []scored
}

func (t *scoredTop) Len() int           { return len(t.h) }
func (t *scoredTop) Less(i, j int) bool { return compareScored(t.h[i], t.h[j]) > 0 }
func (t *scoredTop) Swap(i, j int)      { t.h[i], t.h[j] = t.h[j], t.h[i] }
func (t *scoredTop) Push(x any)         { t.h = append(t.h, x.(scored)) }
func (t *scoredTop) Pop() any {
	x := t.h[len(t.h)-1]
	t.h = t.h[:len(t.h)-1]
	return x
}

func (t *scoredTop) offer(c scored) {
	switch {
	case len(t.h) < t.n:
		heap.Push(t, c)
	case compareScored(c, t.h[0]) < 0:
		t.h[0] = c
		heap.Fix(t, 0)
	}
}

// sorted is the kept candidates, nearest first.
func (t *scoredTop) sorted() []scored {
	out := slices.Clone(t.h)
	sortScored(out)
	return out
}

// memtableCandidates compares the memtable's live versions with the query, gathering their
// vectors a slice at a time.
func (s *Store) memtableCandidates(ctx context.Context, snap *Snapshot, q NearestQuery, qNorm float32, live []version, genRows *shard.RowReader) ([]scored, error) {
	if len(live) == 0 {
		return nil, nil
	}
	reader := newPageBuilder(s, []string{q.Column}, []string{q.Column})
	defer reader.release()
	var out []scored
	for start := 0; start < len(live); start += nearestGatherRows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		part := live[start:min(start+nearestGatherRows, len(live))]
		rec, err := reader.gather(ctx, snap, part, genRows)
		if err != nil {
			return nil, err
		}
		err = eachVector(rec.Column(0), func(i int, v []float32) {
			if len(v) == len(q.Query) {
				out = append(out, scored{v: part[i], d: q.Metric.DistanceNorms(q.Query, qNorm, v, vecindex.Norm(v)), vec: slices.Clone(v)})
			}
		})
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dropStale removes pending candidates whose key has a newer base-table row (a row merged from
// another shard after this one's pending version was written), looking up keys nearest first
// until k candidates are known to be current; the unchecked rest are left out (fewer than k
// current ones means every candidate was checked).
func (s *Store) dropStale(ctx context.Context, snap *Snapshot, cands []scored, k int) ([]scored, error) {
	var out []scored
	for start := 0; start < len(cands) && len(out) < k; {
		end := min(len(cands), start+max(k-len(out), 16))
		keys := make([]string, 0, end-start)
		for _, c := range cands[start:end] {
			keys = append(keys, c.v.key)
		}
		base, err := s.tbl.Lookup(ctx, snap.Table, keys)
		if err != nil {
			return nil, err
		}
		for _, c := range cands[start:end] {
			if r, ok := base[c.v.key]; ok && r.Seq > c.v.seq {
				continue
			}
			out = append(out, c)
		}
		start = end
	}
	return out, nil
}

// eachVector calls fn with each non-null value of a list<float32> column.
func eachVector(col arrow.Array, fn func(i int, v []float32)) error {
	list, ok := col.(*array.List)
	if !ok {
		return fmt.Errorf("%w: a vector column of type %s (want a list of float32)", table.ErrSchema, col.DataType())
	}
	values, ok := list.ListValues().(*array.Float32)
	if !ok {
		return fmt.Errorf("%w: a vector column of type %s (want a list of float32)", table.ErrSchema, col.DataType())
	}
	floats := values.Float32Values()
	for i := 0; i < list.Len(); i++ {
		if list.IsNull(i) {
			continue
		}
		start, end := list.ValueOffsets(i)
		fn(i, floats[start:end])
	}
	return nil
}

// emptyRecord is a record of no rows with the named columns.
func emptyRecord(s *Store, names []string) arrow.RecordBatch {
	fields := make([]arrow.Field, len(names))
	cols := make([]arrow.Array, len(names))
	for i, n := range names {
		fields[i] = s.schema.Field(s.schema.FieldIndices(n)[0])
		cols[i] = array.MakeArrayOfNull(s.mem, fields[i].Type, 0)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// VectorIndexOptions select the vector indexes BuildVectorIndexes builds.
type VectorIndexOptions = table.VectorIndexOptions

// BuildVectorIndexes indexes a vector column in every base-table fragment that lacks an index of
// it (see table.BuildVectorIndexes).
func (s *Store) BuildVectorIndexes(ctx context.Context, opts VectorIndexOptions) (table.VectorIndexResult, error) {
	return s.tbl.BuildVectorIndexes(ctx, opts)
}
