// Package textindex is a full-text index over one fragment's text column, kept as one immutable
// object beside the fragment: an inverted file (each term's postings: the documents holding it
// and how often), each document's fragment row position and length, and the index's totals. A
// query's statistics (documents, tokens, document frequencies) are summed over every source a
// read sees before any document is scored, so a score does not depend on where a row lives.
//
// Text is analyzed by github.com/blevesearch/bleve/v2's analysis: its Unicode tokenizer (word
// boundaries of Unicode's text segmentation, so "don't", "3.14" and CJK text split as a reader
// expects) and its lowercase filter; no stop words and no stemming, so every word can be found as
// written. Why not a bleve index per fragment: a bleve index is a directory of mutable segment
// files plus a root database, opened from a local path; Strata's indexes are single immutable
// objects read from object storage into the process-wide cache, and bleve's BM25 takes its
// statistics from its own index, where a store's scores need statistics summed across fragments
// and the WAL. The posting format is a few dozen lines; the analysis, where the subtlety is, is
// bleve's.
//
// The file format (little endian) is documented in docs/format/textindex.md.
package textindex

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
)

// ErrCorrupt reports an index object that is not an intact object of this format.
var ErrCorrupt = errors.New("textindex: corrupt index")

const (
	// MaxTermBytes bounds a term: a longer token (a base64 blob, a run of digits) is not a term
	// and is not counted in its document's length.
	MaxTermBytes = 128
	// MaxQueryTerms bounds a query's distinct terms.
	MaxQueryTerms = 64
	// MaxQueryBytes bounds a query's text.
	MaxQueryBytes = 16 << 10
)

// analyzer is shared: bleve's tokenizer and filter hold no state between calls.
var analyzer = &analysis.DefaultAnalyzer{
	Tokenizer:    unicode.NewUnicodeTokenizer(),
	TokenFilters: []analysis.TokenFilter{lowercase.NewLowerCaseFilter()},
}

// eachTerm calls fn with every term of text, in order (term is only valid during the call).
func eachTerm(text string, fn func(term []byte)) {
	if text == "" {
		return
	}
	for _, tok := range analyzer.Analyze([]byte(text)) {
		if len(tok.Term) > 0 && len(tok.Term) <= MaxTermBytes && utf8.Valid(tok.Term) {
			fn(tok.Term)
		}
	}
}

// Terms is text's terms, in order, repeats included.
func Terms(text string) []string {
	var out []string
	eachTerm(text, func(t []byte) { out = append(out, string(t)) })
	return out
}

// Query is a parsed text query: its distinct terms.
type Query struct {
	Terms []string
}

// ParseQuery reads a text query; its errors are the caller's (too long, too many terms, none).
func ParseQuery(text string) (Query, error) {
	if len(text) > MaxQueryBytes {
		return Query{}, fmt.Errorf("text is %d bytes, over the limit of %d", len(text), MaxQueryBytes)
	}
	var q Query
	for _, t := range Terms(text) {
		if slices.Contains(q.Terms, t) {
			continue
		}
		if len(q.Terms) == MaxQueryTerms {
			return Query{}, fmt.Errorf("text has more than %d distinct terms", MaxQueryTerms)
		}
		q.Terms = append(q.Terms, t)
	}
	if len(q.Terms) == 0 {
		return Query{}, fmt.Errorf("text has no searchable terms (letters or digits)")
	}
	return q, nil
}

// Doc is one document's match of a query: its length in terms and each query term's frequency
// in it (by the query's term order).
type Doc struct {
	Len uint32
	TF  []uint32
}

// Match scores text against q's terms: ok is false when text holds none of them. Length counts
// every term of text.
func (q Query) Match(text string) (Doc, bool) {
	d := Doc{}
	eachTerm(text, func(t []byte) {
		d.Len++
		for i, qt := range q.Terms {
			if qt == string(t) {
				if d.TF == nil {
					d.TF = make([]uint32, len(q.Terms))
				}
				d.TF[i]++
				break
			}
		}
	})
	return d, d.TF != nil
}

// Stats are a query's statistics over every document a read sees: how many, their total length,
// and how many hold each query term.
type Stats struct {
	Docs   int64
	Tokens int64
	DF     []int64 // by the query's term order
}

// NewStats is empty statistics for q.
func (q Query) NewStats() Stats { return Stats{DF: make([]int64, len(q.Terms))} }

// AddDoc counts one document (its match, when it holds a query term).
func (s *Stats) AddDoc(length uint32, d *Doc) {
	s.Docs++
	s.Tokens += int64(length)
	if d != nil {
		for i, tf := range d.TF {
			if tf > 0 {
				s.DF[i]++
			}
		}
	}
}

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Scorer scores documents under fixed statistics with Okapi BM25 (k1 1.2, b 0.75; idf
// ln(1 + (N − df + 0.5)/(df + 0.5))).
type Scorer struct {
	idf []float64
	avg float64
}

// NewScorer prepares scoring under s.
func NewScorer(s Stats) *Scorer {
	avg := 1.0
	if s.Docs > 0 && s.Tokens > 0 {
		avg = float64(s.Tokens) / float64(s.Docs)
	}
	idf := make([]float64, len(s.DF))
	for i, df := range s.DF {
		df = min(df, s.Docs)
		idf[i] = math.Log(1 + (float64(s.Docs)-float64(df)+0.5)/(float64(df)+0.5))
	}
	return &Scorer{idf: idf, avg: avg}
}

// Score is d's BM25 score: the sum of its terms' parts, added in the query's term order (as
// Index.Top adds them).
func (sc *Scorer) Score(d Doc) float32 {
	var score float32
	for i, tf := range d.TF {
		if tf == 0 || i >= len(sc.idf) {
			continue
		}
		score += sc.termScore(sc.idf[i], tf, d.Len)
	}
	return score
}

// termScore is one term's part of a document's score.
func (sc *Scorer) termScore(idf float64, tf, length uint32) float32 {
	norm := bm25K1 * (1 - bm25B + bm25B*float64(length)/sc.avg)
	f := float64(tf)
	return float32(idf * f * (bm25K1 + 1) / (f + norm))
}
