// Full-text indexes: an inverted file per fragment over one string column (storage/textindex),
// written beside the fragment under text/ and named by the fragment's manifest entry, and the
// text search over a version that uses them (a fragment without one is scanned and analyzed
// exactly; both answer the same).
//
// Ownership: as for vector indexes (fragmentindex.go). Decoded indexes are immutable and live in
// the process-wide object cache under their path.
package table

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/textindex"
)

// TextIndexRef names a fragment's full-text index object.
type TextIndexRef struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	Column string `json:"column"`
	Docs   int64  `json:"docs"` // documents indexed: live rows whose value was not null
}

func (r *TextIndexRef) serves(column string) bool { return r != nil && r.Column == column }

// TextIndexOptions select what BuildTextIndexes indexes.
type TextIndexOptions struct {
	Column string
	// MinRows: a fragment with fewer live rows is left to exact scans (default 1,000).
	MinRows int64
	// MaxFragments bounds the fragments one call indexes (default: all).
	MaxFragments int
	// Progress, when set, is told of each fragment indexed (documents indexed so far, fragments
	// indexed so far, fragments to index).
	Progress func(docs int64, done, total int)
}

// TextIndexResult reports a build.
type TextIndexResult struct {
	Fragments int   // fragments indexed
	Docs      int64 // documents indexed
	Bytes     int64 // bytes written
	Version   uint64
}

// FragmentsWithoutTextIndex counts the fragments of m that BuildTextIndexes would index.
func FragmentsWithoutTextIndex(m *Manifest, opts TextIndexOptions) int {
	return len(textIndexTodo(m, opts))
}

func textIndexTodo(m *Manifest, opts TextIndexOptions) []Fragment {
	minRows := opts.MinRows
	if minRows <= 0 {
		minRows = defaultVectorMinRows
	}
	var todo []Fragment
	for _, f := range m.Fragments {
		if f.LiveRows() >= minRows && !f.TextIndex.serves(opts.Column) {
			todo = append(todo, f)
		}
	}
	if opts.MaxFragments > 0 && len(todo) > opts.MaxFragments {
		todo = todo[:opts.MaxFragments]
	}
	return todo
}

// BuildTextIndexes indexes column in every fragment of the latest version that has at least
// MinRows live rows and no index of that column, and commits the indexes in one version. A
// fragment whose rows hold no text gets an empty index (it is covered: nothing to build again).
func (t *Table) BuildTextIndexes(ctx context.Context, opts TextIndexOptions) (TextIndexResult, error) {
	var res TextIndexResult
	m, err := t.Latest(ctx)
	if err != nil {
		return res, err
	}
	if err := checkTextColumn(m, opts.Column); err != nil {
		return res, err
	}
	n, version, err := buildFragmentIndexes(ctx, t, m, fragmentIndexBuild[TextIndexRef]{
		op:   "index-text",
		todo: textIndexTodo(m, opts),
		build: func(ctx context.Context, f Fragment) (TextIndexRef, string, bool, error) {
			ref, err := t.buildFragmentTextIndex(ctx, f, opts.Column)
			return ref, ref.Path, err == nil, err
		},
		attach: func(f *Fragment, ref TextIndexRef) bool {
			if f.TextIndex.serves(opts.Column) {
				return false
			}
			f.TextIndex = &ref
			return true
		},
		attached: func(f Fragment) string {
			if f.TextIndex == nil {
				return ""
			}
			return f.TextIndex.Path
		},
		progress: func(ref TextIndexRef, ok bool, done, total int) {
			if ok {
				res.Docs += ref.Docs
				res.Bytes += ref.Bytes
			}
			if opts.Progress != nil {
				opts.Progress(res.Docs, done, total)
			}
		},
	})
	res.Fragments, res.Version = n, version
	return res, err
}

func checkTextColumn(m *Manifest, column string) error {
	idx := m.Schema().FieldIndices(column)
	if len(idx) == 0 {
		return schemaErr("no column %q", column)
	}
	if typ := m.Schema().Field(idx[0]).Type.ID(); typ != arrow.STRING && typ != arrow.LARGE_STRING {
		return schemaErr("column %q is %s, not a string", column, m.Schema().Field(idx[0]).Type)
	}
	return nil
}

// buildFragmentTextIndex indexes f's live, non-tombstone rows whose column value is not null and
// writes the index object.
func (t *Table) buildFragmentTextIndex(ctx context.Context, f Fragment, column string) (TextIndexRef, error) {
	del, err := t.deletions(ctx, f)
	if err != nil {
		return TextIndexRef{}, err
	}
	b := textindex.NewBuilder()
	if err := t.fragmentTexts(ctx, f, column, del, func(row uint32, text string) { b.Add(row, text) }); err != nil {
		return TextIndexRef{}, err
	}
	ix, err := b.Index(ctx)
	if err != nil {
		return TextIndexRef{}, err
	}
	data := ix.Encode()
	path := indexObjectPath(textDir, f.ID, "stxi")
	if err := t.store.Put(ctx, path, data); err != nil {
		return TextIndexRef{}, fmt.Errorf("table: write text index %s: %w", path, err)
	}
	return TextIndexRef{Path: path, Bytes: int64(len(data)), Column: column, Docs: int64(ix.Docs())}, nil
}

// fragmentTexts calls fn with the row position and value of every row of f that del does not
// hold, that is not a tombstone and whose column value is not null, in row order.
func (t *Table) fragmentTexts(ctx context.Context, f Fragment, column string, del *roaring.Bitmap, fn func(row uint32, text string)) error {
	return t.reader.Scan(ctx, f.Ref(), []string{column, TombstoneColumn}, func(batch arrow.RecordBatch, offset int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ci := batch.Schema().FieldIndices(column)
		if len(ci) == 0 {
			return nil // the fragment predates the column: no text
		}
		texts, ok := batch.Column(ci[0]).(interface {
			arrow.Array
			Value(int) string
		})
		if !ok {
			return schemaErr("column %q is not a string", column)
		}
		var tombs *array.Boolean
		if ti := batch.Schema().FieldIndices(TombstoneColumn); len(ti) > 0 {
			tombs, _ = batch.Column(ti[0]).(*array.Boolean)
		}
		for i := 0; i < texts.Len(); i++ {
			row := uint32(offset + int64(i))
			if texts.IsNull(i) || del.Contains(row) || (tombs != nil && tombs.Value(i)) {
				continue
			}
			fn(row, texts.Value(i))
		}
		return nil
	})
}

// textIndex is f's decoded text index, from the object cache or read and decoded.
func (t *Table) textIndex(ctx context.Context, f Fragment) (*textindex.Index, error) {
	ref := f.TextIndex
	if ix, ok := cache.Get[*textindex.Index](t.cache, "text_index", ref.Path); ok {
		return ix, nil
	}
	data, err := t.store.Get(ctx, ref.Path)
	if err != nil {
		return nil, fmt.Errorf("table: read text index %s: %w", ref.Path, err)
	}
	if int64(len(data)) != ref.Bytes {
		return nil, fmt.Errorf("table: text index %s is %d bytes, the manifest says %d", ref.Path, len(data), ref.Bytes)
	}
	ix, err := textindex.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("table: text index %s: %w", ref.Path, err)
	}
	cache.Add(t.cache, "text_index", ref.Path, ix, ix.MemoryBytes())
	return ix, nil
}

// TextQuery asks for the rows of a version whose text matches a query.
type TextQuery struct {
	Column string
	Query  textindex.Query
	// Shadowed, when set, leaves rows out by fragment (rows the caller holds newer versions
	// of): they count in neither the statistics nor the matches.
	Shadowed map[uint64]*roaring.Bitmap
}

// TextHit is one row of a text search's answer (Key and Seq of Ref are not read: see RowKeys)
// and its score.
type TextHit struct {
	Ref   RowRef
	Score float32
}

// TextSearch is a text query over one version in two phases: NewTextSearch counts the version's
// statistics, Top ranks its documents under a scorer the caller builds from the statistics of
// every source it reads (so scores are comparable across them).
type TextSearch struct {
	q       TextQuery
	sources []textSource
}

// textSource is one fragment's part of a search: its index and the rows left out of it, or the
// matches a scan of the fragment found.
type textSource struct {
	fragment uint64
	ix       *textindex.Index
	deleted  *roaring.Bitmap
	scanned  []textindex.RowDoc
}

// NewTextSearch adds every live document of version m (a live, non-tombstone row whose column
// value is not null, not shadowed) to stats: through each fragment's text index when it has one
// of the column, by a scan that keeps the matches otherwise.
func (t *Table) NewTextSearch(ctx context.Context, m *Manifest, q TextQuery, stats *textindex.Stats) (*TextSearch, error) {
	if err := checkTextColumn(m, q.Column); err != nil {
		return nil, err
	}
	ts := &TextSearch{q: q}
	for _, f := range m.Fragments {
		if f.LiveRows() == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		del, err := t.deletions(ctx, f)
		if err != nil {
			return nil, err
		}
		if sh := q.Shadowed[f.ID]; sh != nil && !sh.IsEmpty() {
			del = roaring.Or(del, sh)
		}
		src := textSource{fragment: f.ID, deleted: del}
		if f.TextIndex.serves(q.Column) {
			if src.ix, err = t.textIndex(ctx, f); err != nil {
				return nil, err
			}
			src.ix.Count(q.Query, del, stats)
			ts.sources = append(ts.sources, src)
			continue
		}
		err = t.fragmentTexts(ctx, f, q.Column, del, func(row uint32, text string) {
			d, ok := q.Query.Match(text)
			if !ok {
				stats.AddDoc(d.Len, nil)
				return
			}
			stats.AddDoc(d.Len, &d)
			src.scanned = append(src.scanned, textindex.RowDoc{Row: row, Doc: d})
		})
		if err != nil {
			return nil, err
		}
		ts.sources = append(ts.sources, src)
	}
	return ts, nil
}

// Top is each fragment's k best documents under sc (so at least the version's k best), best
// first within a fragment.
func (ts *TextSearch) Top(sc *textindex.Scorer, k int) []TextHit {
	var out []TextHit
	for _, src := range ts.sources {
		var top []textindex.Scored
		if src.ix != nil {
			top = src.ix.Top(ts.q.Query, src.deleted, sc, k)
		} else {
			top = textindex.TopDocs(src.scanned, sc, k)
		}
		for _, s := range top {
			out = append(out, TextHit{Ref: RowRef{Fragment: src.fragment, Row: int64(s.Row)}, Score: s.Score})
		}
	}
	return out
}
