// The index: built from a fragment's documents (or a pending generation's, kept in memory), and
// the per-fragment part of a query — its statistics and matches, with the caller's deleted rows
// left out of both.
package textindex

import (
	"context"
	"encoding/binary"
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
)

// Index is one source's inverted file. Immutable once built or decoded: shared through caches.
type Index struct {
	rows    []uint32 // document ordinal → row position, increasing
	lens    []uint32 // document ordinal → length in terms
	tokens  uint64
	terms   []string // sorted, distinct
	df      []uint32
	offsets []uint64 // term i's postings are postings[offsets[i]:offsets[i+1]]
	// postings: per term, df (uvarint doc-ordinal delta, uvarint tf) pairs; the first delta is
	// the ordinal itself.
	postings []byte
}

// Docs is how many documents the index holds.
func (ix *Index) Docs() int { return len(ix.rows) }

// Tokens is the indexed documents' total length.
func (ix *Index) Tokens() uint64 { return ix.tokens }

// MemoryBytes estimates the decoded index's footprint (for the object cache).
func (ix *Index) MemoryBytes() int64 {
	n := int64(8*len(ix.rows) + 8*len(ix.offsets) + len(ix.postings) + 4*len(ix.df) + 64)
	for _, t := range ix.terms {
		n += int64(16 + len(t))
	}
	return n
}

// Builder collects documents for an index. Add rows in increasing order.
type Builder struct {
	rows   []uint32
	lens   []uint32
	tokens uint64
	terms  map[string]int
	lists  [][]uint32 // per term (by first appearance): ordinal, tf pairs
	seen   []int      // per term: the last ordinal counted (−1 none)
}

// NewBuilder starts an empty index.
func NewBuilder() *Builder { return &Builder{terms: map[string]int{}} }

// Add indexes row's text (a document; an empty text is a document of length 0).
func (b *Builder) Add(row uint32, text string) {
	doc := uint32(len(b.rows))
	var n uint32
	eachTerm(text, func(t []byte) {
		n++
		i, ok := b.terms[string(t)]
		if !ok {
			i = len(b.lists)
			b.terms[string(t)] = i
			b.lists = append(b.lists, nil)
			b.seen = append(b.seen, -1)
		}
		if b.seen[i] == int(doc) {
			b.lists[i][len(b.lists[i])-1]++
			return
		}
		b.seen[i] = int(doc)
		b.lists[i] = append(b.lists[i], doc, 1)
	})
	b.rows = append(b.rows, row)
	b.lens = append(b.lens, n)
	b.tokens += uint64(n)
}

// Len is how many documents were added.
func (b *Builder) Len() int { return len(b.rows) }

// Index is the built index (the builder is spent).
func (b *Builder) Index(ctx context.Context) (*Index, error) {
	terms := make([]string, 0, len(b.terms))
	for t := range b.terms {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	ix := &Index{rows: b.rows, lens: b.lens, tokens: b.tokens, terms: terms,
		df: make([]uint32, len(terms)), offsets: make([]uint64, len(terms)+1)}
	for i, t := range terms {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		list := b.lists[b.terms[t]]
		prev := uint32(0)
		for j := 0; j < len(list); j += 2 {
			ix.postings = binary.AppendUvarint(ix.postings, uint64(list[j]-prev))
			ix.postings = binary.AppendUvarint(ix.postings, uint64(list[j+1]))
			prev = list[j]
		}
		ix.df[i] = uint32(len(list) / 2)
		ix.offsets[i+1] = uint64(len(ix.postings))
	}
	b.terms, b.lists, b.seen = nil, nil, nil
	return ix, nil
}

// Count adds the index's documents that deleted does not hold (rows deleted since the index was
// built, or shadowed by a newer version elsewhere; nil for none) to stats. Its cost is the deleted
// rows and, when there are any, the query terms' postings; otherwise the dictionary's counts
// answer.
func (ix *Index) Count(q Query, deleted *roaring.Bitmap, stats *Stats) {
	stats.Docs += int64(len(ix.rows))
	stats.Tokens += int64(ix.tokens)
	if deleted != nil && !deleted.IsEmpty() {
		it := deleted.Iterator()
		for it.HasNext() {
			if d, ok := slices.BinarySearch(ix.rows, it.Next()); ok {
				stats.Docs--
				stats.Tokens -= int64(ix.lens[d])
			}
		}
	} else {
		deleted = nil
	}
	for qi, term := range q.Terms {
		ti, ok := slices.BinarySearch(ix.terms, term)
		if !ok {
			continue
		}
		if deleted == nil {
			stats.DF[qi] += int64(ix.df[ti])
			continue
		}
		ix.eachPosting(ti, func(doc, _ uint32) {
			if !deleted.Contains(ix.rows[doc]) {
				stats.DF[qi]++
			}
		})
	}
}

// eachPosting calls fn with each (document ordinal, term frequency) of term ti.
func (ix *Index) eachPosting(ti int, fn func(doc, tf uint32)) {
	p := ix.postings[ix.offsets[ti]:ix.offsets[ti+1]]
	doc := uint32(0)
	for len(p) > 0 {
		delta, n := binary.Uvarint(p)
		p = p[n:]
		tf, m := binary.Uvarint(p)
		p = p[m:]
		doc += uint32(delta)
		fn(doc, uint32(tf))
	}
}

// Scored is a row and its score.
type Scored struct {
	Row   uint32
	Score float32
}

// Top is the k best scoring of the index's documents that deleted does not hold and that hold a
// query term, under sc, best first (ties: the smaller row). Scores accumulate a term at a time
// into one slot per document, so its cost is the query terms' postings.
func (ix *Index) Top(q Query, deleted *roaring.Bitmap, sc *Scorer, k int) []Scored {
	if deleted != nil && deleted.IsEmpty() {
		deleted = nil
	}
	acc := make([]float32, len(ix.rows))
	var touched []uint32
	for qi, term := range q.Terms {
		ti, ok := slices.BinarySearch(ix.terms, term)
		if !ok || qi >= len(sc.idf) {
			continue
		}
		idf := sc.idf[qi]
		ix.eachPosting(ti, func(doc, tf uint32) {
			if deleted != nil && deleted.Contains(ix.rows[doc]) {
				return
			}
			if acc[doc] == 0 {
				touched = append(touched, doc)
			}
			acc[doc] += sc.termScore(idf, tf, ix.lens[doc])
		})
	}
	top := newTopScored(k)
	for _, doc := range touched {
		top.offer(Scored{Row: ix.rows[doc], Score: acc[doc]})
	}
	return top.sorted()
}

// TopDocs is the k best scoring of docs (rows with their matches), as Index.Top ranks them.
func TopDocs(docs []RowDoc, sc *Scorer, k int) []Scored {
	top := newTopScored(k)
	for _, d := range docs {
		top.offer(Scored{Row: d.Row, Score: sc.Score(d.Doc)})
	}
	return top.sorted()
}

// RowDoc is one row's match.
type RowDoc struct {
	Row uint32
	Doc Doc
}

// topScored keeps the k best (highest score; ties: the smaller row): a min-heap on the worst.
type topScored struct {
	k int
	h []Scored
}

func newTopScored(k int) *topScored { return &topScored{k: k, h: make([]Scored, 0, min(k, 1024))} }

// better reports whether a ranks above b.
func better(a, b Scored) bool { return a.Score > b.Score || (a.Score == b.Score && a.Row < b.Row) }

func (t *topScored) offer(s Scored) {
	if t.k <= 0 {
		return
	}
	if len(t.h) < t.k {
		t.h = append(t.h, s)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !better(t.h[p], t.h[i]) {
				break
			}
			t.h[p], t.h[i] = t.h[i], t.h[p]
			i = p
		}
		return
	}
	if !better(s, t.h[0]) {
		return
	}
	t.h[0] = s
	for i := 0; ; {
		l, r, worst := 2*i+1, 2*i+2, i
		if l < len(t.h) && better(t.h[worst], t.h[l]) {
			worst = l
		}
		if r < len(t.h) && better(t.h[worst], t.h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		t.h[i], t.h[worst] = t.h[worst], t.h[i]
		i = worst
	}
}

func (t *topScored) sorted() []Scored {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b Scored) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return out
}
