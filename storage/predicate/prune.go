// Pruning: whether a row group may hold a row the predicate keeps, from its column statistics.
// The answer errs towards yes: false only when the statistics rule out every row.
package predicate

import "strings"

// Stats are one row group's column statistics.
type Stats interface {
	// Column is col's statistics; ok is false when nothing is known about it.
	Column(col string) (ColumnStats, bool)
}

// ColumnStats are what a row group's statistics say about one column. Min and Max, when
// HasMinMax, are of the column's kind: string, int64 (integers and timestamps), float64 or bool.
type ColumnStats struct {
	AllNull   bool // every row is null (a column the fragment predates, too)
	HasNulls  bool // some row may be null
	HasMinMax bool
	Min, Max  any
}

// MayMatch reports whether a row group with statistics st may hold a row e keeps.
func MayMatch(e Expr, st Stats) bool { return e.mayMatch(st) }

func (e *andExpr) mayMatch(st Stats) bool { return e.l.mayMatch(st) && e.r.mayMatch(st) }
func (e *orExpr) mayMatch(st Stats) bool  { return e.l.mayMatch(st) || e.r.mayMatch(st) }
func (e *notExpr) mayMatch(Stats) bool    { return true }

func (e *cmpExpr) mayMatch(st Stats) bool {
	cs, ok := st.Column(e.col.name)
	if !ok {
		return true
	}
	if cs.AllNull {
		return false // a comparison with a null is never true
	}
	if !cs.HasMinMax {
		return true
	}
	lo, hi := orderOf(e.col.kind, e.v, cs.Min), orderOf(e.col.kind, e.v, cs.Max)
	if lo == 2 || hi == 2 {
		return true
	}
	switch e.op {
	case "=":
		return lo <= 0 && hi >= 0
	case "!=":
		return lo != 0 || hi != 0
	case "<":
		return lo < 0
	case "<=":
		return lo <= 0
	case ">":
		return hi > 0
	case ">=":
		return hi >= 0
	}
	return true
}

func (e *inExpr) mayMatch(st Stats) bool {
	if e.negate {
		return true
	}
	for _, v := range e.values {
		if !v.null && (&cmpExpr{e.col, "=", v}).mayMatch(st) {
			return true
		}
	}
	return false
}

func (e *isNullExpr) mayMatch(st Stats) bool {
	cs, ok := st.Column(e.col.name)
	if !ok {
		return true
	}
	if e.negate {
		return !cs.AllNull
	}
	return cs.AllNull || cs.HasNulls
}

func (e *likeExpr) mayMatch(st Stats) bool {
	cs, ok := st.Column(e.col.name)
	if !ok || e.negate {
		return true
	}
	if cs.AllNull {
		return false
	}
	prefix := likePrefix(e.pattern)
	if prefix == "" || !cs.HasMinMax {
		return true
	}
	lo, ok1 := cs.Min.(string)
	hi, ok2 := cs.Max.(string)
	if !ok1 || !ok2 {
		return true
	}
	// Every string starting with prefix lies in [prefix, anything past it that still starts
	// with it]: none is in the group when its max is below prefix, or its min is above prefix
	// without starting with it.
	return hi >= prefix && (lo <= prefix || strings.HasPrefix(lo, prefix))
}

// orderOf compares a statistic s with the literal: -1 when s < v, 0 equal, 1 greater; 2 when it
// cannot tell.
func orderOf(k kind, v value, s any) int {
	switch x := s.(type) {
	case string:
		if k == kindString {
			return strings.Compare(x, v.s)
		}
	case int64:
		if k == kindInt || k == kindTimestamp {
			if v.isFloat {
				return cmp3(float64(x), v.f)
			}
			return cmp3(x, v.i)
		}
	case float64:
		if k == kindFloat && x == x { // not NaN
			return cmp3(x, v.f)
		}
	case bool:
		if k == kindBool {
			switch {
			case x == v.b:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	}
	return 2
}
