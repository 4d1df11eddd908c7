// LIKE matching in time linear in the value for every pattern a caller can write: a pattern is
// compiled once into segments (the text between '%'s, where '_' stands for one character), and a
// value is matched by anchoring the first segment at the start, the last at the end, and finding
// each middle segment at its leftmost place after the previous one. Leftmost is always right for
// segments of a fixed length, so nothing is ever retried: a value of n bytes costs O(n·m) at
// worst for a pattern of m bytes with '_' in its middle segments, O(n+m) without. A recursive
// matcher that backtracks at every '%' costs O(n^k) for k wildcards instead.
package predicate

import (
	"strings"
	"unicode/utf8"
)

// likePart is a run of literal text or of '_' wildcards (each one character).
type likePart struct {
	lit  string
	anys int // > 0: this many characters, whatever they are
}

// likeSegment is the text between two '%'s: parts in order, and how many characters it spans.
type likeSegment struct {
	parts []likePart
	runes int
}

// likeMatcher is a compiled LIKE pattern: segments between '%'s; open[Start|End] when the pattern
// begins or ends with '%' (a pattern without '%' has one segment that must span the value).
type likeMatcher struct {
	segs      []likeSegment
	openStart bool
	openEnd   bool
	hasAny    bool // at least one '%'
}

// compileLike reads a SQL LIKE pattern: % any run of characters, _ one character, a backslash
// makes the next character literal (a trailing backslash is itself).
func compileLike(pattern string) *likeMatcher {
	m := &likeMatcher{}
	var seg likeSegment
	var lit strings.Builder
	flushLit := func() {
		if lit.Len() > 0 {
			seg.parts = append(seg.parts, likePart{lit: lit.String()})
			lit.Reset()
		}
	}
	endSeg := func() {
		flushLit()
		m.segs = append(m.segs, seg)
		seg = likeSegment{}
	}
	for i := 0; i < len(pattern); {
		r, n := utf8.DecodeRuneInString(pattern[i:])
		switch r {
		case '%':
			if i == 0 {
				m.openStart = true
			}
			m.hasAny = true
			endSeg()
			i += n
			for i < len(pattern) && pattern[i] == '%' { // %% is %
				i++
			}
			if i == len(pattern) {
				m.openEnd = true
			}
			continue
		case '_':
			flushLit()
			if k := len(seg.parts); k > 0 && seg.parts[k-1].anys > 0 {
				seg.parts[k-1].anys++
			} else {
				seg.parts = append(seg.parts, likePart{anys: 1})
			}
			seg.runes++
			i += n
			continue
		case '\\':
			if i+n < len(pattern) {
				i += n
				_, n = utf8.DecodeRuneInString(pattern[i:]) // the escaped character, literally
			}
		}
		lit.WriteString(pattern[i : i+n])
		seg.runes++
		i += n
	}
	if !m.openEnd || !m.hasAny {
		endSeg()
	}
	if m.openStart && len(m.segs) > 0 && len(m.segs[0].parts) == 0 {
		m.segs = m.segs[1:] // the empty text before a leading '%'
	}
	return m
}

// matchAt reports whether seg matches s at byte offset i, and the offset just past it.
func (seg *likeSegment) matchAt(s string, i int) (int, bool) {
	for _, p := range seg.parts {
		if p.anys > 0 {
			for range p.anys {
				if i >= len(s) {
					return 0, false
				}
				_, n := utf8.DecodeRuneInString(s[i:])
				i += n
			}
			continue
		}
		if !strings.HasPrefix(s[i:], p.lit) {
			return 0, false
		}
		i += len(p.lit)
	}
	return i, true
}

// find is seg's leftmost match in s at or after from: its start and end, or ok=false. stop, when
// set, is asked every findCheckEvery start positions whether to give up (ok=false then).
func (seg *likeSegment) find(s string, from int, stop func() bool) (int, int, bool) {
	if len(seg.parts) == 1 && seg.parts[0].anys == 0 { // literal text: one substring search
		j := strings.Index(s[from:], seg.parts[0].lit)
		if j < 0 {
			return 0, 0, false
		}
		return from + j, from + j + len(seg.parts[0].lit), true
	}
	for i, tried := from, 0; i <= len(s); tried++ {
		if stop != nil && tried%findCheckEvery == findCheckEvery-1 && stop() {
			return 0, 0, false
		}
		if end, ok := seg.matchAt(s, i); ok {
			return i, end, true
		}
		if i == len(s) {
			break
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	return 0, 0, false
}

// findCheckEvery is how many start positions a segment search tries between two calls of its stop
// function: a value of megabytes against a pattern of a kilobyte is many milliseconds of work.
const findCheckEvery = 4096

// match reports whether s matches the pattern.
func (m *likeMatcher) match(s string) bool { return m.matchUntil(s, nil) }

// matchUntil is match, giving up (false) when stop, asked now and then during a long search,
// says so.
func (m *likeMatcher) matchUntil(s string, stop func() bool) bool {
	if !m.hasAny { // no '%': the one segment spans s exactly
		end, ok := m.segs[0].matchAt(s, 0)
		return ok && end == len(s)
	}
	segs := m.segs
	pos, limit := 0, len(s)
	if !m.openStart {
		end, ok := segs[0].matchAt(s, 0)
		if !ok {
			return false
		}
		pos, segs = end, segs[1:]
	}
	if !m.openEnd {
		last := &segs[len(segs)-1]
		start := len(s)
		for range last.runes { // its start: as many characters back from the end as it spans
			if start <= pos {
				return false
			}
			_, n := utf8.DecodeLastRuneInString(s[:start])
			start -= n
		}
		if start < pos {
			return false
		}
		if end, ok := last.matchAt(s, start); !ok || end != len(s) {
			return false
		}
		limit, segs = start, segs[:len(segs)-1]
	}
	within := s[:limit]
	for i := range segs {
		_, end, ok := segs[i].find(within, pos, stop)
		if !ok {
			return false
		}
		pos = end
	}
	return true
}

// like matches s against a SQL LIKE pattern (compiling it each call: tests and one-off uses).
func like(s, pattern string) bool { return compileLike(pattern).match(s) }
