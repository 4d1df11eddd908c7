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

// Hit is one matching row: its position and its match.
type Hit struct {
	Row uint32
	Doc Doc
}

// Search adds the index's documents that deleted does not hold (rows deleted since the index was
// built, or shadowed by a newer version elsewhere; nil for none) to stats and calls hit with each
// one holding a query term, in row order. Its cost is the query terms' postings and the deleted
// rows, not the index's size.
func (ix *Index) Search(q Query, deleted *roaring.Bitmap, stats *Stats, hit func(Hit)) {
	stats.Docs += int64(len(ix.rows))
	stats.Tokens += int64(ix.tokens)
	if deleted != nil {
		it := deleted.Iterator()
		for it.HasNext() {
			if d, ok := slices.BinarySearch(ix.rows, it.Next()); ok {
				stats.Docs--
				stats.Tokens -= int64(ix.lens[d])
			}
		}
	}
	// Matches by document ordinal, merged over the query's terms.
	matches := map[uint32]*Doc{}
	var order []uint32
	for qi, term := range q.Terms {
		ti, ok := slices.BinarySearch(ix.terms, term)
		if !ok {
			continue
		}
		p := ix.postings[ix.offsets[ti]:ix.offsets[ti+1]]
		doc := uint32(0)
		for len(p) > 0 {
			delta, n := binary.Uvarint(p)
			p = p[n:]
			tf, m := binary.Uvarint(p)
			p = p[m:]
			doc += uint32(delta)
			if deleted != nil && deleted.Contains(ix.rows[doc]) {
				continue
			}
			stats.DF[qi]++
			d := matches[doc]
			if d == nil {
				d = &Doc{Len: ix.lens[doc], TF: make([]uint32, len(q.Terms))}
				matches[doc] = d
				order = append(order, doc)
			}
			d.TF[qi] = uint32(tf)
		}
	}
	slices.Sort(order)
	for _, doc := range order {
		hit(Hit{Row: ix.rows[doc], Doc: *matches[doc]})
	}
}
