// Vector indexes: an approximate nearest-neighbour index per fragment over one list<float32>
// column (storage/vecindex), written beside the fragment under vectors/ and named by the
// fragment's manifest entry, and the nearest-row search over a version that uses them (a
// fragment without one is scanned exactly).
//
// Ownership: a build writes its objects before the commit that names them; an object no commit
// names (a lost race, a fragment compacted away meanwhile, a failed commit) goes to the deleter,
// and cleanup collects whatever is left after its grace period. Decoded index heads and lists are
// immutable and live in the process-wide object cache, each on its own (a search reads the head
// and the lists it probes), so an index larger than the cache still serves searches.
package table

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/vecindex"
)

// VectorIndexRef names a fragment's vector index object.
type VectorIndexRef struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	Column string `json:"column"`
	Metric string `json:"metric"`
	Dim    int    `json:"dim"`
	Rows   int64  `json:"rows"` // vectors indexed
}

// serves reports whether the index answers queries on column under metric.
func (r *VectorIndexRef) serves(column string, metric vecindex.Metric) bool {
	return r != nil && r.Column == column && r.Metric == metric.String()
}

// VectorIndexOptions select what BuildVectorIndexes indexes.
type VectorIndexOptions struct {
	Column string
	Metric vecindex.Metric
	// MinRows: a fragment with fewer live rows is left to exact scans (default 1,000).
	MinRows int64
	// MaxFragments bounds the fragments one call indexes (default: all).
	MaxFragments int
	// Progress, when set, is told of each fragment indexed (vectors indexed so far, fragments
	// indexed so far, fragments to index).
	Progress func(vectors int64, done, total int)
	// Tick, when set, is called as a fragment's build advances (see vecindex.BuildOptions).
	Tick func()
}

// VectorIndexResult reports a build.
type VectorIndexResult struct {
	Fragments int   // fragments indexed
	Vectors   int64 // vectors indexed
	Bytes     int64 // bytes written
	Version   uint64
}

const defaultVectorMinRows = 1000

// FragmentsWithoutVectorIndex counts the fragments of m that BuildVectorIndexes would index.
func FragmentsWithoutVectorIndex(m *Manifest, opts VectorIndexOptions) int {
	return len(vectorIndexTodo(m, opts))
}

func vectorIndexTodo(m *Manifest, opts VectorIndexOptions) []Fragment {
	minRows := opts.MinRows
	if minRows <= 0 {
		minRows = defaultVectorMinRows
	}
	var todo []Fragment
	for _, f := range m.Fragments {
		if f.LiveRows() >= minRows && !f.VectorIndex.serves(opts.Column, opts.Metric) {
			todo = append(todo, f)
		}
	}
	if opts.MaxFragments > 0 && len(todo) > opts.MaxFragments {
		todo = todo[:opts.MaxFragments]
	}
	return todo
}

// BuildVectorIndexes indexes column in every fragment of the latest version that has at least
// MinRows live rows and no index of that column and metric, and commits the indexes in one
// version. A fragment with vectors of several lengths gets an index of the most common one; one
// without any vector gets an empty index (see buildFragmentVectorIndex).
func (t *Table) BuildVectorIndexes(ctx context.Context, opts VectorIndexOptions) (VectorIndexResult, error) {
	var res VectorIndexResult
	m, err := t.Latest(ctx)
	if err != nil {
		return res, err
	}
	if len(m.Schema().FieldIndices(opts.Column)) == 0 {
		return res, schemaErr("no column %q", opts.Column)
	}
	n, version, err := buildFragmentIndexes(ctx, t, m, fragmentIndexBuild[VectorIndexRef]{
		op:   "index-vectors",
		todo: vectorIndexTodo(m, opts),
		build: func(ctx context.Context, f Fragment) (VectorIndexRef, string, bool, error) {
			ref, ok, err := t.buildFragmentVectorIndex(ctx, m, f, opts)
			return ref, ref.Path, ok, err
		},
		attach: func(f *Fragment, ref VectorIndexRef) bool {
			if f.VectorIndex.serves(opts.Column, opts.Metric) {
				return false
			}
			f.VectorIndex = &ref
			return true
		},
		attached: func(f Fragment) string {
			if f.VectorIndex == nil {
				return ""
			}
			return f.VectorIndex.Path
		},
		progress: func(ref VectorIndexRef, ok bool, done, total int) {
			if ok {
				res.Vectors += ref.Rows
				res.Bytes += ref.Bytes
			}
			if opts.Progress != nil {
				opts.Progress(res.Vectors, done, total)
			}
		},
	})
	res.Fragments, res.Version = n, version
	return res, err
}

// buildFragmentVectorIndex reads f's vectors (live, non-tombstone, non-null rows) and writes their
// index. Vectors of several lengths (a store that declares none): the most common length is
// indexed, the others are left to exact scans (which a query of their length runs anyway). A
// fragment without any vector gets an empty index, so that it counts as indexed and no build
// comes back for it; ok is false only when the build wrote nothing.
func (t *Table) buildFragmentVectorIndex(ctx context.Context, m *Manifest, f Fragment, opts VectorIndexOptions) (VectorIndexRef, bool, error) {
	del, err := t.deletions(ctx, f)
	if err != nil {
		return VectorIndexRef{}, false, err
	}
	byDim := map[int]*vecindex.Vectors{}
	err = t.fragmentVectors(ctx, m, f, opts.Column, del, func(row uint32, v []float32) {
		vs := byDim[len(v)]
		if vs == nil {
			vs = &vecindex.Vectors{Dim: len(v)}
			byDim[len(v)] = vs
		}
		vs.Rows = append(vs.Rows, row)
		vs.Values = append(vs.Values, v...)
	})
	if err != nil {
		return VectorIndexRef{}, false, err
	}
	vs := &vecindex.Vectors{Dim: 1} // no vector: an empty index (of a nominal dimension)
	for _, c := range byDim {
		if len(c.Rows) > len(vs.Rows) || (len(c.Rows) == len(vs.Rows) && c.Dim < vs.Dim) {
			vs = c
		}
	}
	data, err := vecindex.Build(ctx, *vs, opts.Metric, vecindex.BuildOptions{Tick: opts.Tick})
	if err != nil {
		return VectorIndexRef{}, false, err
	}
	path := indexObjectPath(vectorsDir, f.ID, "svix")
	if err := t.store.Put(ctx, path, data); err != nil {
		return VectorIndexRef{}, false, fmt.Errorf("table: write vector index %s: %w", path, err)
	}
	return VectorIndexRef{Path: path, Bytes: int64(len(data)), Column: opts.Column, Metric: opts.Metric.String(),
		Dim: vs.Dim, Rows: int64(len(vs.Rows))}, true, nil
}

// fragmentVectors calls fn with the row position and vector of every live, non-tombstone row of
// f whose column value is not null (v is only valid during the call).
func (t *Table) fragmentVectors(ctx context.Context, m *Manifest, f Fragment, column string, del *roaring.Bitmap, fn func(row uint32, v []float32)) error {
	if len(m.Schema().FieldIndices(column)) == 0 {
		return schemaErr("no column %q", column)
	}
	return t.reader.Scan(ctx, f.Ref(), []string{column, TombstoneColumn}, func(batch arrow.RecordBatch, offset int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ci := batch.Schema().FieldIndices(column)
		if len(ci) == 0 {
			return nil // the fragment predates the column: no vectors
		}
		list, ok := batch.Column(ci[0]).(*array.List)
		if !ok {
			return schemaErr("column %q is not a list of float32", column)
		}
		values, ok := list.ListValues().(*array.Float32)
		if !ok {
			return schemaErr("column %q is not a list of float32", column)
		}
		var tombs *array.Boolean
		if ti := batch.Schema().FieldIndices(TombstoneColumn); len(ti) > 0 {
			tombs, _ = batch.Column(ti[0]).(*array.Boolean)
		}
		floats := values.Float32Values()
		for i := 0; i < list.Len(); i++ {
			row := uint32(offset + int64(i))
			if list.IsNull(i) || del.Contains(row) || (tombs != nil && tombs.Value(i)) {
				continue
			}
			start, end := list.ValueOffsets(i)
			if end > start {
				fn(row, floats[start:end])
			}
		}
		return nil
	})
}

// vectorIndexHead is f's vector index head, from the object cache or read (its fixed header,
// then the rest of the head) and decoded. The lists are read as searches probe them
// (vectorIndexLists), so an index need not fit the cache whole.
func (t *Table) vectorIndexHead(ctx context.Context, f Fragment) (*vecindex.Head, error) {
	ref := f.VectorIndex
	if h, ok := cache.Get[*vecindex.Head](t.cache, "vector_index_head", ref.Path); ok {
		return h, nil
	}
	if ref.Bytes < vecindex.HeaderBytes {
		return nil, fmt.Errorf("table: vector index %s: %w: %d bytes", ref.Path, vecindex.ErrCorrupt, ref.Bytes)
	}
	prefix, err := t.store.GetRange(ctx, ref.Path, 0, vecindex.HeaderBytes)
	if err != nil {
		return nil, fmt.Errorf("table: read vector index %s: %w", ref.Path, err)
	}
	n, err := vecindex.HeadBytes(prefix)
	if err == nil && n > ref.Bytes {
		err = fmt.Errorf("%w: a head of %d bytes in an object of %d", vecindex.ErrCorrupt, n, ref.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("table: vector index %s: %w", ref.Path, err)
	}
	data, err := t.store.GetRange(ctx, ref.Path, 0, n)
	if err != nil {
		return nil, fmt.Errorf("table: read vector index %s: %w", ref.Path, err)
	}
	h, err := vecindex.DecodeHead(data)
	if err == nil && h.ObjectBytes() != ref.Bytes {
		err = fmt.Errorf("%w: the head declares %d bytes, the manifest %d", vecindex.ErrCorrupt, h.ObjectBytes(), ref.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("table: vector index %s: %w", ref.Path, err)
	}
	cache.Add(t.cache, "vector_index_head", ref.Path, h, h.MemoryBytes())
	return h, nil
}

// vectorListReads bounds the list reads one search runs at once.
const vectorListReads = 16

// vectorIndexLists is lists of f's vector index (head h), each from the object cache or read
// (one ranged read a list, up to vectorListReads at once), checked and cached on its own.
func (t *Table) vectorIndexLists(ctx context.Context, f Fragment, h *vecindex.Head, lists []int) ([]*vecindex.List, error) {
	path := f.VectorIndex.Path
	out := make([]*vecindex.List, len(lists))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(vectorListReads)
	for i, l := range lists {
		key := path + "#" + strconv.Itoa(l)
		if c, ok := cache.Get[*vecindex.List](t.cache, "vector_index_list", key); ok {
			out[i] = c
			continue
		}
		g.Go(func() error { // sets out[i] only
			at, n := h.ListRange(l)
			data, err := t.store.GetRange(gctx, path, at, n)
			if err != nil {
				return fmt.Errorf("table: read vector index %s: %w", path, err)
			}
			list, err := h.DecodeList(l, data)
			if err != nil {
				return fmt.Errorf("table: vector index %s: %w", path, err)
			}
			cache.Add(t.cache, "vector_index_list", key, list, list.MemoryBytes())
			out[i] = list
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// VectorQuery asks for the rows nearest to a query vector.
type VectorQuery struct {
	Column string
	Metric vecindex.Metric
	Query  []float32
	K      int
	// Skip, when set, leaves out rows by key (the caller's newer versions of them): they take
	// no place among K.
	Skip func(key string, seq uint64) bool
}

// VectorHit is one row near the query: its key-index entry (key, fragment, row, seq), its
// distance and, when a vector index answered it, its vector (shared with the index: never
// modified; nil from an exact scan).
type VectorHit struct {
	Ref      RowRef
	Distance float32
	Vector   []float32
}

// NearestRows answers the K live rows of version m nearest to q.Query in q.Column, nearest first
// (ties: the smaller key): through each fragment's vector index when it has one for the column and
// metric (approximate: the lists it probes), by an exact scan otherwise. Rows whose vector is
// null or of another length are never answered. exhausted reports that the version holds no
// further candidate: fewer than K rows were answered because no more exist.
func (t *Table) NearestRows(ctx context.Context, m *Manifest, q VectorQuery) (hits []VectorHit, exhausted bool, err error) {
	if q.K <= 0 {
		return nil, false, nil
	}
	exhausted = true
	var all []VectorHit
	for _, f := range m.Fragments {
		if f.LiveRows() == 0 {
			continue
		}
		fh, fragmentExhausted, err := t.nearestInFragment(ctx, m, f, q)
		if err != nil {
			return nil, false, err
		}
		exhausted = exhausted && fragmentExhausted
		all = append(all, fh...)
	}
	sortHits(all)
	if len(all) > q.K {
		all, exhausted = all[:q.K], false
	}
	return all, exhausted, nil
}

func sortHits(hs []VectorHit) {
	slices.SortFunc(hs, func(a, b VectorHit) int {
		switch {
		case a.Distance < b.Distance:
			return -1
		case a.Distance > b.Distance:
			return 1
		case a.Ref.Key < b.Ref.Key:
			return -1
		case a.Ref.Key > b.Ref.Key:
			return 1
		}
		return 0
	})
}

// nearestInFragment is f's K nearest live rows (keys and seqs read for them), and whether f
// has no more.
func (t *Table) nearestInFragment(ctx context.Context, m *Manifest, f Fragment, q VectorQuery) ([]VectorHit, bool, error) {
	del, err := t.deletions(ctx, f)
	if err != nil {
		return nil, false, err
	}
	var cands []vecindex.Hit
	exhausted := false
	if f.VectorIndex.serves(q.Column, q.Metric) && f.VectorIndex.Rows == 0 {
		return nil, true, nil // indexed when it held no vector at all (an index of the most common length has rows)
	}
	if f.VectorIndex.serves(q.Column, q.Metric) && f.VectorIndex.Dim == len(q.Query) {
		head, err := t.vectorIndexHead(ctx, f)
		if err != nil {
			return nil, false, err
		}
		load := func(lists []int) ([]*vecindex.List, error) { return t.vectorIndexLists(ctx, f, head, lists) }
		// Over-fetch for the rows the caller will skip; when the probed lists run short, every
		// list is scanned, so that "fewer than asked" means the fragment has no more.
		want := q.K
		for {
			opts := vecindex.SearchOptions{K: want, Skip: func(r uint32) bool { return del.Contains(r) }}
			if cands, err = head.Search(q.Query, opts, load); err != nil {
				return nil, false, err
			}
			if len(cands) < want && opts.NProbe < head.Lists() {
				opts.NProbe = head.Lists()
				if cands, err = head.Search(q.Query, opts, load); err != nil {
					return nil, false, err
				}
			}
			hits, err := t.resolveHits(ctx, m, f, cands, q.Skip)
			if err != nil {
				return nil, false, err
			}
			if len(hits) >= q.K || len(cands) < want {
				return hits, len(cands) < want, nil
			}
			want *= 4 // the caller skipped some: look further
		}
	}
	// Exact: every vector of the fragment.
	top := make([]vecindex.Hit, 0)
	err = t.fragmentVectors(ctx, m, f, q.Column, del, func(row uint32, v []float32) {
		if len(v) == len(q.Query) {
			top = append(top, vecindex.Hit{Row: row, Distance: q.Metric.Distance(q.Query, v)})
		}
	})
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(top, func(a, b vecindex.Hit) int {
		switch {
		case a.Distance < b.Distance:
			return -1
		case a.Distance > b.Distance:
			return 1
		}
		return int(a.Row) - int(b.Row)
	})
	hits, err := t.resolveHitsUntil(ctx, m, f, top, q.Skip, q.K)
	exhausted = len(hits) < q.K
	return hits, exhausted, err
}

// resolveHitsUntil resolves candidates (nearest first) a batch at a time until k survive q.Skip.
func (t *Table) resolveHitsUntil(ctx context.Context, m *Manifest, f Fragment, cands []vecindex.Hit, skip func(string, uint64) bool, k int) ([]VectorHit, error) {
	var out []VectorHit
	for len(cands) > 0 && len(out) < k {
		n := min(len(cands), max(2*(k-len(out)), 16))
		hits, err := t.resolveHits(ctx, m, f, cands[:n], skip)
		if err != nil {
			return nil, err
		}
		out = append(out, hits...)
		cands = cands[n:]
	}
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// resolveHits reads the key and seq of f's candidate rows and drops the ones skip reports.
func (t *Table) resolveHits(ctx context.Context, m *Manifest, f Fragment, cands []vecindex.Hit, skip func(string, uint64) bool) ([]VectorHit, error) {
	refs := make([]RowRef, len(cands))
	for i, c := range cands {
		refs[i] = RowRef{Fragment: f.ID, Row: int64(c.Row)}
	}
	if err := t.RowKeys(ctx, m, refs); err != nil {
		return nil, err
	}
	out := make([]VectorHit, 0, len(cands))
	for i, c := range cands {
		if skip != nil && skip(refs[i].Key, refs[i].Seq) {
			continue
		}
		out = append(out, VectorHit{Ref: refs[i], Distance: c.Distance, Vector: c.Vector})
	}
	return out, nil
}
