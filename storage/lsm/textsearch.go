// Text search: the rows of a store whose text column best matches a query (BM25), across every
// source a read sees — this process's memtables and every shard's pending generations, analyzed
// exactly (a generation's inverted file built once and cached: it is immutable), and the base
// table through its fragments' text indexes (table.SearchText) — with the newest version of each
// key the only one that counts: a base row whose key has a newer pending version (or tombstone)
// is left out of the statistics and the matches, and so is a pending version older than the base
// row of its key. The statistics (documents, their total length, each term's document frequency)
// are summed over that one set of newest versions before anything is scored, so a row's score
// does not depend on whether it is in the WAL or in which fragment.
package lsm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storage/textindex"
)

// TextQuery asks for the rows best matching a text query.
type TextQuery struct {
	Column string // a string column
	Query  textindex.Query
	K      int
	// Columns are the columns to answer (every user column when empty).
	Columns []string
	// Before, when set, limits the answer to keys below it (the statistics count every
	// document).
	Before string
}

// TextResult is a text search's answer.
type TextResult struct {
	// Rows are the K best matching live rows (fewer when fewer match), best first (ties: the
	// smaller key), with the asked columns. The caller releases them.
	Rows arrow.RecordBatch
	// Scores[i] is row i's BM25 score.
	Scores []float32
	// Exhausted: no other row matches (a larger K answers nothing more).
	Exhausted bool
}

// SearchText answers the K rows whose q.Column best matches q.Query.
func (s *Store) SearchText(ctx context.Context, q TextQuery) (TextResult, error) {
	names, err := s.columns(q.Columns)
	if err != nil {
		return TextResult{}, err
	}
	if len(s.schema.FieldIndices(q.Column)) == 0 {
		return TextResult{}, fmt.Errorf("%w: no column %q", table.ErrSchema, q.Column)
	}
	if q.K <= 0 {
		q.K = 10
	}
	return readFresh(ctx, s, func() (TextResult, error) { return s.searchTextOnce(ctx, q, names) })
}

// textCandidate is a matching version and its match.
type textCandidate struct {
	v     version
	doc   textindex.Doc
	score float32
}

func (s *Store) searchTextOnce(ctx context.Context, q TextQuery, names []string) (TextResult, error) {
	mem := &shard.MemView{}
	if w := s.residentWriter(); w != nil {
		mem = w.View("")
	}
	defer mem.Release()
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return TextResult{}, err
	}
	pending, err := s.pendingFor(ctx, snap, mem, "")
	if err != nil {
		return TextResult{}, err
	}
	gens := pending.views()
	genRows := s.shards.NewCachingRowReader()
	defer genRows.Release()

	// The newest pending versions, checked against the base table: a base row they supersede is
	// shadowed; a pending version the base row supersedes is not live.
	bases := map[*genView]*genBase{}
	for j := range gens {
		if bases[&gens[j]], err = s.generationBase(ctx, snap, &gens[j]); err != nil {
			return TextResult{}, err
		}
	}
	var memKeys []string
	for k := range pending.mem {
		memKeys = append(memKeys, k)
	}
	memBase, err := s.tbl.Lookup(ctx, snap.Table, memKeys)
	if err != nil {
		return TextResult{}, err
	}
	shadowed := map[uint64]*roaring.Bitmap{}
	liveInGen := map[*genView]*roaring.Bitmap{}
	var memLive []version
	pending.each(func(p version) {
		var r baseRow
		if p.src == sourceGeneration {
			r = bases[p.gen].rows[p.row]
		} else if ref, ok := memBase[p.key]; ok {
			r = baseRow{found: true, fragment: ref.Fragment, row: uint32(ref.Row), seq: ref.Seq}
		}
		if r.found {
			if r.seq > p.seq {
				return
			}
			if shadowed[r.fragment] == nil {
				shadowed[r.fragment] = roaring.New()
			}
			shadowed[r.fragment].Add(r.row)
		}
		switch {
		case p.tomb:
		case p.src == sourceGeneration:
			if liveInGen[p.gen] == nil {
				liveInGen[p.gen] = roaring.New()
			}
			liveInGen[p.gen].Add(uint32(p.row))
		default:
			memLive = append(memLive, p)
		}
	})

	// Phase one: every source's statistics.
	stats := q.Query.NewStats()
	type genSource struct {
		g    *genView
		ix   *textindex.Index
		dead *roaring.Bitmap
	}
	var genSources []genSource
	for j := range gens {
		g := &gens[j]
		live := liveInGen[g]
		if live == nil {
			continue
		}
		ix, err := s.generationTexts(ctx, snap, g, q.Column, genRows)
		if err != nil {
			return TextResult{}, err
		}
		// The generation's rows that are not their key's live version are left out.
		dead := roaring.Flip(live, 0, uint64(len(g.keys.Keys)))
		ix.Count(q.Query, dead, &stats)
		genSources = append(genSources, genSource{g, ix, dead})
	}
	// The memtable's live versions, gathered a slice at a time and analyzed.
	var memMatches []textCandidate
	texts := newPageBuilder(s, []string{q.Column}, []string{q.Column})
	defer texts.release()
	for start := 0; start < len(memLive); start += nearestGatherRows {
		if err := ctx.Err(); err != nil {
			return TextResult{}, err
		}
		part := memLive[start:min(start+nearestGatherRows, len(memLive))]
		rec, err := texts.gather(ctx, snap, part, genRows)
		if err != nil {
			return TextResult{}, err
		}
		err = eachText(rec.Column(0), func(i int, text string) {
			d, ok := q.Query.Match(text)
			if !ok {
				stats.AddDoc(d.Len, nil)
				return
			}
			stats.AddDoc(d.Len, &d)
			memMatches = append(memMatches, textCandidate{v: part[i], doc: d})
		})
		rec.Release()
		if err != nil {
			return TextResult{}, err
		}
	}
	// The base table, its shadowed rows left out.
	baseSearch, err := s.tbl.NewTextSearch(ctx, snap.Table, table.TextQuery{Column: q.Column, Query: q.Query, Shadowed: shadowed}, &stats)
	if err != nil {
		return TextResult{}, err
	}

	// Phase two: each source's k best under the statistics of them all.
	scorer := textindex.NewScorer(stats)
	var cands []textCandidate
	for _, src := range genSources {
		for _, h := range src.ix.Top(q.Query, src.dead, scorer, q.K) {
			cands = append(cands, textCandidate{v: generationVersion(src.g, int(h.Row)), score: h.Score})
		}
	}
	for _, c := range memMatches {
		c.score = scorer.Score(c.doc)
		cands = append(cands, c)
	}
	for _, h := range baseSearch.Top(scorer, q.K) {
		cands = append(cands, textCandidate{v: tableVersion(h.Ref), score: h.Score})
	}
	slices.SortFunc(cands, func(a, b textCandidate) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	top, err := s.topTextCandidates(ctx, snap, cands, q.K, q.Before)
	if err != nil {
		return TextResult{}, err
	}
	out := TextResult{Scores: make([]float32, len(top)), Exhausted: len(top) < q.K}
	versions := make([]version, len(top))
	for i, c := range top {
		versions[i], out.Scores[i] = c.v, c.score
	}
	if out.Rows, err = s.answerRows(ctx, snap, versions, names, genRows); err != nil {
		return TextResult{}, err
	}
	return out, nil
}

// topTextCandidates is the k best of cands (sorted by score, best first) whose key is below
// before, ties broken by the smaller key: base candidates' keys are read only for the rows that
// can make the cut (every candidate scoring at least the k-th best).
func (s *Store) topTextCandidates(ctx context.Context, snap *Snapshot, cands []textCandidate, k int, before string) ([]textCandidate, error) {
	var kept []textCandidate
	next := 0
	for next < len(cands) && len(kept) < k {
		end := min(len(cands), next+k-len(kept))
		for end < len(cands) && cands[end].score == cands[end-1].score {
			end++
		}
		var refs []table.RowRef
		var at []int
		for i := next; i < end; i++ {
			if cands[i].v.src == sourceTable {
				refs = append(refs, cands[i].v.ref())
				at = append(at, i)
			}
		}
		if err := s.tbl.RowKeys(ctx, snap.Table, refs); err != nil {
			return nil, err
		}
		for j, i := range at {
			cands[i].v.key, cands[i].v.seq = refs[j].Key, refs[j].Seq
		}
		for i := next; i < end; i++ {
			if before == "" || cands[i].v.key < before {
				kept = append(kept, cands[i])
			}
		}
		next = end
	}
	slices.SortStableFunc(kept, func(a, b textCandidate) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return strings.Compare(a.v.key, b.v.key)
	})
	return kept[:min(k, len(kept))], nil
}

// baseRow is where the base table holds a key's row (found false: it holds none).
type baseRow struct {
	found    bool
	row      uint32
	fragment uint64
	seq      uint64
}

// genBase is, for each key-file position of a pending generation, the base row of its key in one
// table version. Shared through the cache: never modified.
type genBase struct {
	rows []baseRow
}

// generationBase is g's keys' base rows in the snapshot's table version, from the cache or looked
// up (one key-index lookup of the generation's keys) and cached: a generation and a table version
// are immutable, so a store's searches look a generation's keys up once per version, not once per
// query.
func (s *Store) generationBase(ctx context.Context, snap *Snapshot, g *genView) (*genBase, error) {
	key := fmt.Sprintf("%s/%d@%d", g.shard, g.gen.Gen, snap.Table.Version)
	if gb, ok := cache.Get[*genBase](s.pendingCache, "generation_base", key); ok {
		return gb, nil
	}
	refs, err := s.tbl.Lookup(ctx, snap.Table, g.keys.Keys)
	if err != nil {
		return nil, err
	}
	gb := &genBase{rows: make([]baseRow, len(g.keys.Keys))}
	for i, k := range g.keys.Keys {
		if r, ok := refs[k]; ok {
			gb.rows[i] = baseRow{found: true, fragment: r.Fragment, row: uint32(r.Row), seq: r.Seq}
		}
	}
	cache.Add(s.pendingCache, "generation_base", key, gb, int64(32*len(gb.rows)+64))
	return gb, nil
}

// generationTexts is g's inverted file of column (documents by key-file position), from the
// cache or built (every non-tombstone row, a slice at a time) and cached.
func (s *Store) generationTexts(ctx context.Context, snap *Snapshot, g *genView, column string, genRows *shard.RowReader) (*textindex.Index, error) {
	key := fmt.Sprintf("%s/%d/%s", g.shard, g.gen.Gen, column)
	if ix, ok := cache.Get[*textindex.Index](s.pendingCache, "generation_texts", key); ok {
		return ix, nil
	}
	var versions []version
	for i := range g.keys.Keys {
		if !g.keys.Tombs[i] {
			versions = append(versions, generationVersion(g, i))
		}
	}
	reader := newPageBuilder(s, []string{column}, []string{column})
	defer reader.release()
	b := textindex.NewBuilder()
	for start := 0; start < len(versions); start += nearestGatherRows {
		part := versions[start:min(start+nearestGatherRows, len(versions))]
		rec, err := reader.gather(ctx, snap, part, genRows)
		if err != nil {
			return nil, err
		}
		err = eachText(rec.Column(0), func(j int, text string) { b.Add(uint32(part[j].row), text) })
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	ix, err := b.Index(ctx)
	if err != nil {
		return nil, err
	}
	cache.Add(s.pendingCache, "generation_texts", key, ix, ix.MemoryBytes())
	return ix, nil
}

// eachText calls fn with each non-null value of a string column.
func eachText(col arrow.Array, fn func(i int, text string)) error {
	switch c := col.(type) {
	case *array.String:
		for i := 0; i < c.Len(); i++ {
			if !c.IsNull(i) {
				fn(i, c.Value(i))
			}
		}
	case *array.LargeString:
		for i := 0; i < c.Len(); i++ {
			if !c.IsNull(i) {
				fn(i, c.Value(i))
			}
		}
	default:
		return fmt.Errorf("%w: a text column of type %s (want a string)", table.ErrSchema, col.DataType())
	}
	return nil
}

// TextIndexOptions select the text indexes BuildTextIndexes builds.
type TextIndexOptions = table.TextIndexOptions

// BuildTextIndexes indexes a text column in every base-table fragment that lacks an index of it
// (see table.BuildTextIndexes).
func (s *Store) BuildTextIndexes(ctx context.Context, opts TextIndexOptions) (table.TextIndexResult, error) {
	return s.tbl.BuildTextIndexes(ctx, opts)
}

// FragmentsWithoutSearchIndexes counts the latest version's fragments that BuildVectorIndexes or
// BuildTextIndexes would index.
func (s *Store) FragmentsWithoutSearchIndexes(ctx context.Context, vec VectorIndexOptions, text TextIndexOptions) (int, error) {
	m, err := s.tbl.Latest(ctx)
	if err != nil {
		return 0, err
	}
	return table.FragmentsWithoutSearchIndexes(m, vec, text), nil
}
