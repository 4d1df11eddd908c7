// Parsing: a tokenizer and a recursive-descent parser for the predicate grammar, resolving every
// column against the schema and every literal to the column's type, so evaluation never meets a
// type it was not given.
//
//	or      := and { OR and }
//	and     := not { AND not }
//	not     := NOT not | pred
//	pred    := '(' or ')' | operand [ cmpop operand | [NOT] IN '(' lit {, lit} ')'
//	           | [NOT] BETWEEN lit AND lit | IS [NOT] NULL | [NOT] LIKE 'pattern' ]
//	operand := column | lit
//	lit     := 'string' ('' escapes a quote) | number | TRUE | FALSE | NULL
//	column  := name | "quoted name" | `quoted name`
package predicate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
)

var comparisons = map[string]bool{"=": true, "==": true, "!=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

// ErrInvalid marks a predicate that does not parse or does not fit the schema.
var ErrInvalid = errors.New("invalid filter")

// Bounds on a predicate, so evaluating one costs a bounded amount of work per row: MaxLength
// bounds its text, MaxDepth its nesting, MaxTerms its comparisons (IN, LIKE, BETWEEN and IS
// each count as one), MaxInValues one IN list, MaxPatternLength one LIKE pattern.
const (
	MaxLength        = 64 << 10
	MaxDepth         = 64
	MaxTerms         = 128
	MaxInValues      = 4096
	MaxPatternLength = 1024
)

func errf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuotedIdent
	tString
	tNumber
	tOp // = != <> < <= > >= ( ) ,
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, errf("unterminated string starting at position %d", i+1)
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, token{tString, b.String(), i})
			i = j + 1
		case c == '"' || c == '`':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, errf("unterminated quoted name starting at position %d", i+1)
			}
			out = append(out, token{tQuotedIdent, s[i+1 : i+1+j], i})
			i += j + 2
		case c >= '0' && c <= '9' || c == '.' || ((c == '-' || c == '+') && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '.') && numberMayStart(out)):
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				((s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E'))) {
				j++
			}
			out = append(out, token{tNumber, s[i:j], i})
			i = j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '.' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			out = append(out, token{tIdent, s[i:j], i})
			i = j
		default:
			for _, op := range []string{"!=", "<>", "<=", ">=", "==", "=", "<", ">", "(", ")", ","} {
				if strings.HasPrefix(s[i:], op) {
					out = append(out, token{tOp, op, i})
					i += len(op)
					goto next
				}
			}
			return nil, errf("unexpected character %q at position %d", c, i+1)
		next:
		}
	}
	return append(out, token{tEOF, "", len(s)}), nil
}

// numberMayStart: a sign starts a number only where an operand may start (not after one).
func numberMayStart(prev []token) bool {
	if len(prev) == 0 {
		return true
	}
	p := prev[len(prev)-1]
	return p.kind == tOp && p.text != ")" || p.kind == tIdent && isKeyword(p.text)
}

func isKeyword(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "BETWEEN", "TRUE", "FALSE":
		return true
	}
	return false
}

type parser struct {
	toks   []token
	i      int
	schema *arrow.Schema
	depth  int
	terms  int // comparisons parsed so far (bounded by MaxTerms)
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) keyword(kw string) bool {
	t := p.peek()
	if t.kind == tIdent && strings.EqualFold(t.text, kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) op(op string) bool {
	t := p.peek()
	if t.kind == tOp && t.text == op {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(op string) error {
	if !p.op(op) {
		return p.unexpected("'" + op + "'")
	}
	return nil
}

func (p *parser) unexpected(want string) error {
	t := p.peek()
	if t.kind == tEOF {
		return errf("expected %s at the end", want)
	}
	return errf("expected %s at position %d, found %q", want, t.pos+1, t.text)
}

// Parse parses a predicate over schema's columns.
func Parse(text string, schema *arrow.Schema) (Expr, error) {
	if len(text) > MaxLength {
		return nil, errf("the filter is %d bytes; at most %d", len(text), MaxLength)
	}
	if strings.TrimSpace(text) == "" {
		return nil, errf("the filter is empty")
	}
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, schema: schema}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tEOF {
		return nil, p.unexpected("AND, OR or the end")
	}
	return e, nil
}

func (p *parser) enter() error {
	if p.depth++; p.depth > MaxDepth {
		return errf("the filter nests more than %d levels", MaxDepth)
	}
	return nil
}

func (p *parser) or() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		left = &orExpr{left, right}
	}
	return left, nil
}

func (p *parser) and() (Expr, error) {
	left, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		right, err := p.not()
		if err != nil {
			return nil, err
		}
		left = &andExpr{left, right}
	}
	return left, nil
}

func (p *parser) not() (Expr, error) {
	if p.keyword("NOT") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		return &notExpr{e}, nil
	}
	return p.pred()
}

// operand is a column or a literal (not yet typed).
type operand struct {
	col   *column
	lit   rawLit
	isCol bool
}

type rawLit struct {
	kind tokKind // tString, tNumber, or tIdent for TRUE/FALSE/NULL
	text string
	pos  int
}

func (p *parser) operand() (operand, error) {
	t := p.peek()
	switch {
	case t.kind == tString || t.kind == tNumber:
		p.i++
		return operand{lit: rawLit(t)}, nil
	case t.kind == tIdent && (strings.EqualFold(t.text, "TRUE") || strings.EqualFold(t.text, "FALSE") || strings.EqualFold(t.text, "NULL")):
		p.i++
		return operand{lit: rawLit{tIdent, strings.ToUpper(t.text), t.pos}}, nil
	case t.kind == tQuotedIdent || (t.kind == tIdent && !isKeyword(t.text)):
		p.i++
		c, err := p.column(t.text)
		return operand{col: c, isCol: true}, err
	}
	return operand{}, p.unexpected("a column or a value")
}

func (p *parser) column(name string) (*column, error) {
	idx := p.schema.FieldIndices(name)
	if len(idx) == 0 {
		var names []string
		for _, f := range p.schema.Fields() {
			if !strings.HasPrefix(f.Name, "_") {
				names = append(names, f.Name)
			}
		}
		return nil, errf("unknown column %q (columns: %s)", name, strings.Join(names, ", "))
	}
	f := p.schema.Field(idx[0])
	k := kindOf(f.Type)
	if k == kindUnsupported {
		return nil, errf("cannot filter on column %q of type %s", name, f.Type)
	}
	return &column{name: name, kind: k, typ: f.Type}, nil
}

func (p *parser) pred() (Expr, error) {
	if p.op("(") {
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	}
	if p.terms++; p.terms > MaxTerms {
		return nil, errf("the filter has more than %d comparisons", MaxTerms)
	}
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	negate := false
	switch {
	case p.keyword("IS"):
		neg := p.keyword("NOT")
		if !p.keyword("NULL") {
			return nil, p.unexpected("NULL")
		}
		if !left.isCol {
			return nil, errf("IS NULL applies to a column")
		}
		return &isNullExpr{col: left.col, negate: neg}, nil
	case p.keyword("NOT"):
		negate = true
		if t := p.peek(); !(t.kind == tIdent && (strings.EqualFold(t.text, "IN") || strings.EqualFold(t.text, "LIKE") || strings.EqualFold(t.text, "BETWEEN"))) {
			return nil, p.unexpected("IN, LIKE or BETWEEN after NOT")
		}
	}
	switch {
	case p.keyword("IN"):
		if !left.isCol {
			return nil, errf("IN applies to a column")
		}
		if err := p.expect("("); err != nil {
			return nil, err
		}
		e := &inExpr{col: left.col, negate: negate}
		for {
			o, err := p.operand()
			if err != nil {
				return nil, err
			}
			if o.isCol {
				return nil, errf("IN lists values, not columns")
			}
			v, err := typed(left.col, o.lit)
			if err != nil {
				return nil, err
			}
			if e.values = append(e.values, v); len(e.values) > MaxInValues {
				return nil, errf("an IN list holds at most %d values", MaxInValues)
			}
			if p.op(")") {
				break
			}
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		e.index()
		return e, nil
	case p.keyword("BETWEEN"):
		if !left.isCol {
			return nil, errf("BETWEEN applies to a column")
		}
		lo, err := p.litFor(left.col)
		if err != nil {
			return nil, err
		}
		if !p.keyword("AND") {
			return nil, p.unexpected("AND")
		}
		hi, err := p.litFor(left.col)
		if err != nil {
			return nil, err
		}
		var e Expr = &andExpr{&cmpExpr{left.col, ">=", lo}, &cmpExpr{left.col, "<=", hi}}
		if negate {
			e = &notExpr{e}
		}
		return e, nil
	case p.keyword("LIKE"):
		if !left.isCol {
			return nil, errf("LIKE applies to a column")
		}
		if left.col.kind != kindString {
			return nil, errf("LIKE applies to a string column; %q is %s", left.col.name, left.col.typ)
		}
		t := p.next()
		if t.kind != tString {
			p.i--
			return nil, p.unexpected("a 'pattern'")
		}
		if len(t.text) > MaxPatternLength {
			return nil, errf("a LIKE pattern is at most %d bytes", MaxPatternLength)
		}
		return &likeExpr{col: left.col, pattern: t.text, match: compileLike(t.text), negate: negate}, nil
	}
	if negate {
		return nil, p.unexpected("IN, LIKE or BETWEEN")
	}
	t := p.peek()
	if t.kind != tOp || !comparisons[t.text] {
		if !left.isCol && left.lit.kind == tIdent {
			return nil, p.unexpected("a comparison")
		}
		if left.isCol && left.col.kind == kindBool {
			return &cmpExpr{left.col, "=", value{b: true}}, nil // a boolean column alone: col = TRUE
		}
		return nil, p.unexpected("a comparison (=, !=, <, <=, >, >=), IN, BETWEEN, LIKE or IS")
	}
	p.i++
	op := t.text
	switch op {
	case "==":
		op = "="
	case "<>":
		op = "!="
	}
	right, err := p.operand()
	if err != nil {
		return nil, err
	}
	switch {
	case left.isCol && right.isCol:
		return nil, errf("compare a column with a value (%q %s %q compares two columns)", left.col.name, op, right.col.name)
	case !left.isCol && !right.isCol:
		return nil, errf("a comparison needs a column")
	case !left.isCol:
		left, right = right, left
		op = map[string]string{"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
	}
	if right.lit.kind == tIdent && right.lit.text == "NULL" {
		return &nullCmpExpr{}, nil // SQL: a comparison with NULL is never true
	}
	v, err := typed(left.col, right.lit)
	if err != nil {
		return nil, err
	}
	if left.col.kind == kindBool && op != "=" && op != "!=" {
		return nil, errf("a boolean column compares with = or !=")
	}
	return &cmpExpr{left.col, op, v}, nil
}

func (p *parser) litFor(c *column) (value, error) {
	o, err := p.operand()
	if err != nil {
		return value{}, err
	}
	if o.isCol {
		return value{}, errf("BETWEEN takes values")
	}
	return typed(c, o.lit)
}

// typed converts a literal to column c's kind, or says why it cannot be compared with it.
func typed(c *column, l rawLit) (value, error) {
	mismatch := func(what string) error {
		return errf("column %q is %s; %s at position %d is %s", c.name, c.typ, l.text, l.pos+1, what)
	}
	if l.kind == tIdent && l.text == "NULL" {
		return value{null: true}, nil
	}
	switch c.kind {
	case kindString:
		if l.kind != tString {
			return value{}, mismatch("not a 'string'")
		}
		return value{s: l.text}, nil
	case kindBool:
		if l.kind != tIdent {
			return value{}, mismatch("not TRUE or FALSE")
		}
		return value{b: l.text == "TRUE"}, nil
	case kindInt, kindUint:
		if l.kind != tNumber {
			return value{}, mismatch("not a number")
		}
		if i, err := strconv.ParseInt(l.text, 10, 64); err == nil {
			return value{i: i, f: float64(i), exact: true}, nil
		}
		f, err := strconv.ParseFloat(l.text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return value{}, mismatch("not a number")
		}
		return value{f: f, i: int64(math.Floor(f)), isFloat: true}, nil
	case kindFloat:
		if l.kind != tNumber {
			return value{}, mismatch("not a number")
		}
		f, err := strconv.ParseFloat(l.text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return value{}, mismatch("not a number")
		}
		return value{f: f}, nil
	case kindTimestamp:
		var t time.Time
		switch l.kind {
		case tString:
			var err error
			if t, err = parseTime(l.text); err != nil {
				return value{}, mismatch("not an RFC 3339 time")
			}
		case tNumber: // microseconds since the epoch, as generic stores answer timestamps
			micros, err := strconv.ParseInt(l.text, 10, 64)
			if err != nil {
				return value{}, mismatch("not a whole number of microseconds")
			}
			t = time.UnixMicro(micros)
		default:
			return value{}, mismatch("not a 'timestamp' string or microseconds since the epoch")
		}
		unit := c.typ.(*arrow.TimestampType).Unit
		ts, err := arrow.TimestampFromTime(t, unit)
		if err != nil {
			return value{}, mismatch("out of the column's range")
		}
		return value{i: int64(ts), exact: true}, nil
	}
	return value{}, errf("cannot filter on column %q", c.name)
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a time")
}
