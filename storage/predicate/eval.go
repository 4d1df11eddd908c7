// The expression tree and its evaluation: each node evaluates over a whole batch, a column at a
// time, to one of true, false or unknown per row (SQL's three-valued logic: a comparison with a
// null is unknown, NOT unknown is unknown, and a row is kept only when the predicate is true).
package predicate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Expr is a parsed predicate. It is immutable and safe for concurrent use.
type Expr interface {
	eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error)
	mayMatch(st Stats) bool
	columns(into map[string]bool)
	String() string
}

const (
	vFalse int8 = iota
	vTrue
	vNull
)

type kind int

const (
	kindUnsupported kind = iota
	kindString
	kindInt
	kindUint
	kindFloat
	kindBool
	kindTimestamp
)

func kindOf(t arrow.DataType) kind {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return kindString
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return kindInt
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return kindUint
	case arrow.FLOAT32, arrow.FLOAT64:
		return kindFloat
	case arrow.BOOL:
		return kindBool
	case arrow.TIMESTAMP:
		return kindTimestamp
	}
	return kindUnsupported
}

type column struct {
	name string
	kind kind
	typ  arrow.DataType
}

// value is a literal typed for its column: s (string), i (int, timestamp; an int column's
// fractional literal has isFloat and f), f (float), b (bool), or null.
type value struct {
	s       string
	i       int64
	f       float64
	b       bool
	null    bool
	exact   bool
	isFloat bool
}

// Select evaluates e over rec: keep[i] is true where the predicate is true. The work stops with
// ctx's error once ctx is done (checked between terms and, in the costly ones, between rows).
func Select(ctx context.Context, e Expr, rec arrow.RecordBatch) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := e.eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	keep := make([]bool, len(v))
	for i, x := range v {
		keep[i] = x == vTrue
	}
	return keep, nil
}

// Columns are the columns e reads, sorted.
func Columns(e Expr) []string {
	set := map[string]bool{}
	e.columns(set)
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func columnOf(rec arrow.RecordBatch, c *column) (arrow.Array, error) {
	idx := rec.Schema().FieldIndices(c.name)
	if len(idx) == 0 {
		return nil, fmt.Errorf("predicate: the batch has no column %q", c.name)
	}
	return rec.Column(idx[0]), nil
}

// --- logical nodes

type andExpr struct{ l, r Expr }
type orExpr struct{ l, r Expr }
type notExpr struct{ e Expr }

func (e *andExpr) eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error) {
	l, err := e.l.eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := e.r.eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	for i := range l {
		switch {
		case l[i] == vFalse || r[i] == vFalse:
			l[i] = vFalse
		case l[i] == vNull || r[i] == vNull:
			l[i] = vNull
		}
	}
	return l, nil
}

func (e *orExpr) eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error) {
	l, err := e.l.eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := e.r.eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	for i := range l {
		switch {
		case l[i] == vTrue || r[i] == vTrue:
			l[i] = vTrue
		case l[i] == vNull || r[i] == vNull:
			l[i] = vNull
		}
	}
	return l, nil
}

func (e *notExpr) eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error) {
	v, err := e.e.eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	for i, x := range v {
		switch x {
		case vTrue:
			v[i] = vFalse
		case vFalse:
			v[i] = vTrue
		}
	}
	return v, nil
}

func (e *andExpr) columns(s map[string]bool) { e.l.columns(s); e.r.columns(s) }
func (e *orExpr) columns(s map[string]bool)  { e.l.columns(s); e.r.columns(s) }
func (e *notExpr) columns(s map[string]bool) { e.e.columns(s) }
func (e *andExpr) String() string            { return "(" + e.l.String() + " AND " + e.r.String() + ")" }
func (e *orExpr) String() string             { return "(" + e.l.String() + " OR " + e.r.String() + ")" }
func (e *notExpr) String() string            { return "NOT " + e.e.String() }

// nullCmpExpr is a comparison with NULL: unknown for every row.
type nullCmpExpr struct{}

func (nullCmpExpr) eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error) {
	v := make([]int8, rec.NumRows())
	for i := range v {
		v[i] = vNull
	}
	return v, nil
}
func (nullCmpExpr) mayMatch(Stats) bool     { return false }
func (nullCmpExpr) columns(map[string]bool) {}
func (nullCmpExpr) String() string          { return "NULL" }

// --- comparisons

type cmpExpr struct {
	col *column
	op  string
	v   value
}

func (e *cmpExpr) columns(s map[string]bool) { s[e.col.name] = true }
func (e *cmpExpr) String() string {
	return fmt.Sprintf("%s %s %v", e.col.name, e.op, e.v.text(e.col.kind))
}

func (v value) text(k kind) string {
	switch k {
	case kindString:
		return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
	case kindBool:
		return fmt.Sprint(v.b)
	case kindFloat:
		return fmt.Sprint(v.f)
	}
	if v.isFloat {
		return fmt.Sprint(v.f)
	}
	return fmt.Sprint(v.i)
}

// holds applies op to the comparison result c (-1, 0, 1 for less, equal, greater).
func holds(op string, c int) bool {
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

func cmp3[T int64 | uint64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareAt returns, per row, the comparison of the column's value with v (or ok=false for a
// null row), through one typed accessor for the whole column.
func compareAt(arr arrow.Array, k kind, v value) (func(i int) int, error) {
	switch a := arr.(type) {
	case *array.String:
		return func(i int) int { return strings.Compare(a.Value(i), v.s) }, nil
	case *array.LargeString:
		return func(i int) int { return strings.Compare(a.Value(i), v.s) }, nil
	case *array.Boolean:
		return func(i int) int {
			x, y := a.Value(i), v.b
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}, nil
	case *array.Float32:
		return func(i int) int { return cmp3(float64(a.Value(i)), v.f) }, nil
	case *array.Float64:
		return func(i int) int { return cmp3(a.Value(i), v.f) }, nil
	case *array.Timestamp:
		return func(i int) int { return cmp3(int64(a.Value(i)), v.i) }, nil
	}
	if k == kindInt {
		get, ok := intGetter(arr)
		if !ok {
			return nil, fmt.Errorf("predicate: column of type %s is not an integer", arr.DataType())
		}
		if v.isFloat {
			return func(i int) int { return cmp3(float64(get(i)), v.f) }, nil
		}
		return func(i int) int { return cmp3(get(i), v.i) }, nil
	}
	if k == kindUint {
		get, ok := uintGetter(arr)
		if !ok {
			return nil, fmt.Errorf("predicate: column of type %s is not an unsigned integer", arr.DataType())
		}
		if v.isFloat || v.i < 0 {
			f := v.f
			if !v.isFloat {
				f = float64(v.i)
			}
			return func(i int) int { return cmp3(float64(get(i)), f) }, nil
		}
		return func(i int) int { return cmp3(get(i), uint64(v.i)) }, nil
	}
	return nil, fmt.Errorf("predicate: cannot compare a %s column", arr.DataType())
}

func intGetter(arr arrow.Array) (func(int) int64, bool) {
	switch a := arr.(type) {
	case *array.Int8:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	case *array.Int16:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	case *array.Int32:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	case *array.Int64:
		return a.Value, true
	}
	return nil, false
}

func uintGetter(arr arrow.Array) (func(int) uint64, bool) {
	switch a := arr.(type) {
	case *array.Uint8:
		return func(i int) uint64 { return uint64(a.Value(i)) }, true
	case *array.Uint16:
		return func(i int) uint64 { return uint64(a.Value(i)) }, true
	case *array.Uint32:
		return func(i int) uint64 { return uint64(a.Value(i)) }, true
	case *array.Uint64:
		return a.Value, true
	}
	return nil, false
}

func (e *cmpExpr) eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error) {
	arr, err := columnOf(rec, e.col)
	if err != nil {
		return nil, err
	}
	c, err := compareAt(arr, e.col.kind, e.v)
	if err != nil {
		return nil, err
	}
	out := make([]int8, arr.Len())
	nulls := arr.NullN() > 0
	for i := range out {
		if nulls && arr.IsNull(i) {
			out[i] = vNull
		} else if holds(e.op, c(i)) {
			out[i] = vTrue
		}
	}
	return out, nil
}

// --- IN, IS NULL, LIKE

type inExpr struct {
	col    *column
	values []value
	negate bool
	// strs / ints hold the list's non-null values when the column is a string / an integer or
	// timestamp column and every value is exact, so a row costs one lookup, not one comparison
	// per value.
	strs map[string]struct{}
	ints map[int64]struct{}
}

// index builds e's lookup set where the column's kind allows one.
func (e *inExpr) index() {
	switch e.col.kind {
	case kindString:
		e.strs = make(map[string]struct{}, len(e.values))
		for _, v := range e.values {
			if !v.null {
				e.strs[v.s] = struct{}{}
			}
		}
	case kindInt, kindTimestamp:
		ints := make(map[int64]struct{}, len(e.values))
		for _, v := range e.values {
			if v.null {
				continue
			}
			if v.isFloat {
				return // a fractional literal: compared one by one
			}
			ints[v.i] = struct{}{}
		}
		e.ints = ints
	}
}

func (e *inExpr) columns(s map[string]bool) { s[e.col.name] = true }
func (e *inExpr) String() string {
	var parts []string
	for _, v := range e.values {
		parts = append(parts, v.text(e.col.kind))
	}
	not := ""
	if e.negate {
		not = "NOT "
	}
	return fmt.Sprintf("%s %sIN (%s)", e.col.name, not, strings.Join(parts, ", "))
}

func (e *inExpr) eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error) {
	arr, err := columnOf(rec, e.col)
	if err != nil {
		return nil, err
	}
	out := make([]int8, arr.Len())
	listHasNull := false
	for _, v := range e.values {
		listHasNull = listHasNull || v.null
	}
	matched, err := e.matches(ctx, arr)
	if err != nil {
		return nil, err
	}
	for i := range out {
		switch {
		case arr.IsNull(i):
			out[i] = vNull
		case matched[i]:
			out[i] = vTrue
		case listHasNull:
			out[i] = vNull
		}
		if e.negate && out[i] != vNull {
			out[i] = 1 - out[i]
		}
	}
	return out, nil
}

// matches reports, per non-null row, whether its value is in the list.
func (e *inExpr) matches(ctx context.Context, arr arrow.Array) ([]bool, error) {
	matched := make([]bool, arr.Len())
	if text, ok := arr.(interface{ Value(int) string }); ok && e.strs != nil {
		for i := range matched {
			_, matched[i] = e.strs[text.Value(i)]
		}
		return matched, nil
	}
	if e.ints != nil {
		get, ok := intGetter(arr)
		if ts, isTS := arr.(*array.Timestamp); isTS {
			get, ok = func(i int) int64 { return int64(ts.Value(i)) }, true
		}
		if ok {
			for i := range matched {
				_, matched[i] = e.ints[get(i)]
			}
			return matched, nil
		}
	}
	for _, v := range e.values { // at most MaxInValues comparisons per row
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if v.null {
			continue
		}
		c, err := compareAt(arr, e.col.kind, v)
		if err != nil {
			return nil, err
		}
		for i := range matched {
			if !matched[i] && !arr.IsNull(i) && c(i) == 0 {
				matched[i] = true
			}
		}
	}
	return matched, nil
}

type isNullExpr struct {
	col    *column
	negate bool
}

func (e *isNullExpr) columns(s map[string]bool) { s[e.col.name] = true }
func (e *isNullExpr) String() string {
	if e.negate {
		return e.col.name + " IS NOT NULL"
	}
	return e.col.name + " IS NULL"
}

func (e *isNullExpr) eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error) {
	arr, err := columnOf(rec, e.col)
	if err != nil {
		return nil, err
	}
	out := make([]int8, arr.Len())
	for i := range out {
		if arr.IsNull(i) != e.negate {
			out[i] = vTrue
		}
	}
	return out, nil
}

type likeExpr struct {
	col     *column
	pattern string
	match   *likeMatcher
	negate  bool
}

func (e *likeExpr) columns(s map[string]bool) { s[e.col.name] = true }
func (e *likeExpr) String() string {
	not := ""
	if e.negate {
		not = "NOT "
	}
	return fmt.Sprintf("%s %sLIKE '%s'", e.col.name, not, strings.ReplaceAll(e.pattern, "'", "''"))
}

// likeCheckBytes is how many bytes of values LIKE matches between two looks at the context (a
// long search within one value looks too, see matchUntil).
const likeCheckBytes = 64 << 10

func (e *likeExpr) eval(ctx context.Context, rec arrow.RecordBatch) ([]int8, error) {
	arr, err := columnOf(rec, e.col)
	if err != nil {
		return nil, err
	}
	text, ok := arr.(interface{ Value(int) string })
	if !ok {
		return nil, fmt.Errorf("predicate: LIKE on a %s column", arr.DataType())
	}
	out := make([]int8, arr.Len())
	stop := func() bool { return ctx.Err() != nil }
	matched := 0
	for i := range out {
		if arr.IsNull(i) {
			out[i] = vNull
			continue
		}
		v := text.Value(i)
		if matched += len(v) + 1; matched > likeCheckBytes {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			matched = 0
		}
		if e.match.matchUntil(v, stop) != e.negate {
			out[i] = vTrue
		}
	}
	if err := ctx.Err(); err != nil { // a search given up on is no answer
		return nil, err
	}
	return out, nil
}

// likePrefix is the literal text a pattern starts with (before any wildcard).
func likePrefix(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '%', '_':
			return b.String()
		case '\\':
			if i+1 < len(pattern) {
				i++
			}
		}
		b.WriteByte(pattern[i])
	}
	return b.String()
}
