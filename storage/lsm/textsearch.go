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
	"maps"
	"slices"
	"strconv"
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
	r, err := s.openSearchRead(ctx, "")
	if err != nil {
		return TextResult{}, err
	}
	defer r.release()
	snap, pending, genRows := r.snap, r.pending, r.rows
	gens := pending.views()

	// The newest pending versions, checked against the base table: a base row they supersede is
	// shadowed; a pending version the base row supersedes is not live. The generations' part is
	// shared per set of generations and table version; the memtable's is overlaid here, copying
	// a shared bitmap before it changes one.
	gs, err := s.generationShadows(ctx, snap, pending)
	if err != nil {
		return TextResult{}, err
	}
	deadInGen, shadowed := gs.dead, gs.shadowed
	var memLive []version
	if len(pending.mem) > 0 {
		deadInGen, shadowed = maps.Clone(deadInGen), maps.Clone(shadowed)
		copied := map[any]bool{}
		memKeys := make([]string, 0, len(pending.mem))
		for k := range pending.mem {
			memKeys = append(memKeys, k)
		}
		memBase, err := s.tbl.Lookup(ctx, snap.Table, memKeys)
		if err != nil {
			return TextResult{}, err
		}
		for key, m := range pending.mem {
			g, inGen := pending.gens.versions[key]
			if inGen && !m.supersedes(g) {
				continue // the generation's version is the newer: counted already
			}
			if inGen {
				if !copied[g.gen] {
					deadInGen[g.gen], copied[g.gen] = deadInGen[g.gen].Clone(), true
				}
				deadInGen[g.gen].Add(uint32(g.row))
			}
			if ref, ok := memBase[key]; ok {
				if ref.Seq > m.seq {
					continue // the base row is the newer
				}
				b := shadowed[ref.Fragment]
				switch {
				case b == nil:
					b = roaring.New()
				case !copied[ref.Fragment]:
					b = b.Clone()
				}
				copied[ref.Fragment] = true
				b.Add(uint32(ref.Row))
				shadowed[ref.Fragment] = b
			}
			if !m.tomb {
				memLive = append(memLive, m)
			}
		}
	}

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
		// The generation's rows that are not their key's live version are left out.
		dead := deadInGen[g]
		if dead.GetCardinality() == uint64(len(g.keys.Keys)) {
			continue
		}
		ix, err := s.generationTexts(ctx, snap, g, q.Column, genRows)
		if err != nil {
			return TextResult{}, err
		}
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

// genShadows is, for one set of pending generations and one table version, which generation rows
// are not their key's live version (a bitmap of key-file positions for every generation) and
// which base rows the generations' live versions shadow (by fragment). Shared through the cache:
// never modified.
type genShadows struct {
	gens     *genPending // what the bitmaps' keys point into
	dead     map[*genView]*roaring.Bitmap
	shadowed map[uint64]*roaring.Bitmap
}

// generationShadows is the pending set's generations' shadows in the snapshot's table version,
// from the cache or computed (each generation's keys looked up once per version: generationBase).
func (s *Store) generationShadows(ctx context.Context, snap *Snapshot, pending *pendingSet) (*genShadows, error) {
	key := pending.gens.id + "@" + strconv.FormatUint(snap.Table.Version, 10)
	if gs, ok := cache.Get[*genShadows](s.pendingCache, "generation_shadows", key); ok && gs.gens == pending.gens {
		return gs, nil // (computed over the same pending set, not one rebuilt since)
	}
	bases := map[*genView]*genBase{}
	views := pending.views()
	for j := range views {
		b, err := s.generationBase(ctx, snap, &views[j])
		if err != nil {
			return nil, err
		}
		bases[&views[j]] = b
	}
	gs := &genShadows{gens: pending.gens, dead: map[*genView]*roaring.Bitmap{}, shadowed: map[uint64]*roaring.Bitmap{}}
	live := map[*genView]*roaring.Bitmap{}
	for j := range views {
		live[&views[j]] = roaring.New()
	}
	for _, p := range pending.gens.list {
		if r := bases[p.gen].rows[p.row]; r.found {
			if r.seq > p.seq {
				continue
			}
			if gs.shadowed[r.fragment] == nil {
				gs.shadowed[r.fragment] = roaring.New()
			}
			gs.shadowed[r.fragment].Add(r.row)
		}
		if !p.tomb {
			live[p.gen].Add(uint32(p.row))
		}
	}
	var cost int64 = 64
	for g, b := range live {
		gs.dead[g] = roaring.Flip(b, 0, uint64(len(g.keys.Keys)))
		cost += int64(gs.dead[g].GetSizeInBytes())
	}
	for _, b := range gs.shadowed {
		cost += int64(b.GetSizeInBytes())
	}
	cache.Add(s.pendingCache, "generation_shadows", key, gs, cost)
	return gs, nil
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
