// The text channel: BM25 over records' text payloads with store-wide term statistics (every
// record the read's lifecycle shows counts toward document frequencies and the mean length, so a
// record's score does not depend on the filters or on where its row happens to live), scored
// exactly as a read streams the rows past.
package contexts

import (
	"fmt"
	"math"
	"sort"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// MaxQueryTerms bounds the distinct terms of a text query.
	MaxQueryTerms = 64
	// MaxQueryTextBytes bounds a text query.
	MaxQueryTextBytes = 16 << 10
)

// Tokens splits text into lowercase terms: maximal runs of letters and digits, each rune
// lowercased on its own (unicode.ToLower), as TextScorer.Add reads records.
func Tokens(text string) []string {
	var out []string
	eachToken(text, nil, func(tok []byte) { out = append(out, string(tok)) })
	return out
}

// eachToken calls fn with each token of text, lowercased into buf (reused; tok is only valid
// during the call).
func eachToken(text string, buf []byte, fn func(tok []byte)) []byte {
	buf = buf[:0]
	for _, r := range text {
		switch {
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || '0' <= r && r <= '9'):
			buf = append(buf, byte(r))
		case r < utf8.RuneSelf && 'A' <= r && r <= 'Z':
			buf = append(buf, byte(r+'a'-'A'))
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsNumber(r)):
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		default:
			if len(buf) > 0 {
				fn(buf)
				buf = buf[:0]
			}
		}
	}
	if len(buf) > 0 {
		fn(buf)
	}
	return buf
}

// TextScorer scores records against a text query. Count every record the read's lifecycle shows
// (the statistics), Candidate the ones that also pass the read's filters; Top then ranks the
// candidates.
type TextScorer struct {
	terms    []string
	index    map[string]int
	docs     int
	totalLen int64
	df       []int
	matches  []textMatch
	buf      []byte // Add's token being lowercased
}

type textMatch struct {
	id  string
	len int32
	tf  []uint16
}

// NewTextScorer prepares a query; errors are the caller's (no terms, too many).
func NewTextScorer(query string) (*TextScorer, error) {
	if len(query) > MaxQueryTextBytes {
		return nil, fmt.Errorf("text is %d bytes, over the limit of %d", len(query), MaxQueryTextBytes)
	}
	s := &TextScorer{index: map[string]int{}}
	for _, t := range Tokens(query) {
		if _, ok := s.index[t]; ok {
			continue
		}
		if len(s.terms) == MaxQueryTerms {
			return nil, fmt.Errorf("text has more than %d distinct terms", MaxQueryTerms)
		}
		s.index[t] = len(s.terms)
		s.terms = append(s.terms, t)
	}
	if len(s.terms) == 0 {
		return nil, fmt.Errorf("text has no searchable terms (letters or digits)")
	}
	s.df = make([]int, len(s.terms))
	return s, nil
}

// Add counts one shown record's text toward the statistics and, when candidate, keeps its term
// frequencies if it holds any query term. It tokenizes as Tokens does without allocating per
// token (a term is looked up as it is lowercased into a reused buffer).
func (s *TextScorer) Add(id string, text *string, candidate bool) {
	s.docs++
	if text == nil {
		return
	}
	var tf []uint16
	n := 0
	s.buf = eachToken(*text, s.buf, func(tok []byte) {
		n++
		i, ok := s.index[string(tok)] // no allocation: a map index by converted bytes
		if !ok {
			return
		}
		if tf == nil {
			tf = make([]uint16, len(s.terms))
		}
		if tf[i] == 0 {
			s.df[i]++
		}
		if tf[i] < math.MaxUint16 {
			tf[i]++
		}
	})
	s.totalLen += int64(n)
	if tf != nil && candidate {
		s.matches = append(s.matches, textMatch{id: id, len: int32(min(n, math.MaxInt32)), tf: tf})
	}
}

// Top is the k best candidates, best first (ties: the smaller id).
func (s *TextScorer) Top(k int) []Scored {
	if s.docs == 0 || len(s.matches) == 0 {
		return nil
	}
	avg := float64(s.totalLen) / float64(s.docs)
	if avg == 0 {
		avg = 1
	}
	idf := make([]float64, len(s.terms))
	for i, df := range s.df {
		idf[i] = math.Log(1 + (float64(s.docs)-float64(df)+0.5)/(float64(df)+0.5))
	}
	out := make([]Scored, 0, len(s.matches))
	for _, m := range s.matches {
		var score float64
		norm := bm25K1 * (1 - bm25B + bm25B*float64(m.len)/avg)
		for i, tf := range m.tf {
			if tf == 0 {
				continue
			}
			f := float64(tf)
			score += idf[i] * f * (bm25K1 + 1) / (f + norm)
		}
		out = append(out, Scored{ID: m.id, Value: float32(score)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Value != out[j].Value {
			return out[i].Value > out[j].Value
		}
		return out[i].ID < out[j].ID
	})
	return out[:min(k, len(out))]
}
