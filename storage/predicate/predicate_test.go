package predicate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "role", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "step", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "reward", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tokens", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

// row is one test row; nil fields are nulls.
type row struct {
	id     string
	role   *string
	step   *int64
	small  *int32
	reward *float32
	ok     *bool
}

func batch(mem memory.Allocator, rows []row) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.id)
		if r.role == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*r.role)
		}
		if r.step == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(*r.step)
		}
		if r.small == nil {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Int32Builder).Append(*r.small)
		}
		if r.reward == nil {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.Float32Builder).Append(*r.reward)
		}
		if r.ok == nil {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.BooleanBuilder).Append(*r.ok)
		}
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000))
		b.Field(7).AppendNull()
	}
	return b.NewRecordBatch()
}

func p[T any](v T) *T { return &v }

func selected(t *testing.T, mem memory.Allocator, text string, rows []row) []string {
	t.Helper()
	e, err := Parse(text, schema)
	require.NoError(t, err, text)
	rec := batch(mem, rows)
	defer rec.Release()
	keep, err := Select(context.Background(), e, rec)
	require.NoError(t, err)
	var out []string
	for i, k := range keep {
		if k {
			out = append(out, rows[i].id)
		}
	}
	return out
}

func TestPredicatesSelectWhatSQLWould(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := []row{
		{id: "a", role: p("user"), step: p(int64(3)), small: p(int32(1)), reward: p(float32(0.5)), ok: p(true)},
		{id: "b", role: p("assistant"), step: p(int64(7)), small: p(int32(2)), reward: p(float32(1.5)), ok: p(false)},
		{id: "c", role: nil, step: p(int64(10)), small: nil, reward: nil, ok: nil},
		{id: "d", role: p("it's"), step: nil, small: p(int32(-4)), reward: p(float32(-2)), ok: p(true)},
	}
	for _, c := range []struct {
		sql  string
		want []string
	}{
		{"step > 5 AND role = 'user'", nil},
		{"step > 5 AND role = 'assistant'", []string{"b"}},
		{"step > 5 OR role = 'user'", []string{"a", "b", "c"}},
		{"NOT (step > 5)", []string{"a"}}, // NOT of unknown (d's null step) stays unknown
		{"role != 'user'", []string{"b", "d"}},
		{"role <> 'user'", []string{"b", "d"}},
		{"role IN ('user', 'assistant')", []string{"a", "b"}},
		{"role NOT IN ('user')", []string{"b", "d"}},
		{"role NOT IN ('user', NULL)", nil}, // x NOT IN (..., NULL) is never true
		{"role IS NULL", []string{"c"}},
		{"role IS NOT NULL AND small IS NULL", nil},
		{"role LIKE 'us%'", []string{"a"}},
		{"role LIKE '%ss%t'", []string{"b"}},
		{"role LIKE '_ser'", []string{"a"}},
		{"role NOT LIKE '%s%'", nil},
		{"role = 'it''s'", []string{"d"}},
		{"step BETWEEN 3 AND 7", []string{"a", "b"}},
		{"step NOT BETWEEN 3 AND 7", []string{"c"}},
		{"5 < step", []string{"b", "c"}},
		{"step >= 7.5", []string{"c"}},
		{"small < 0", []string{"d"}},
		{"reward > 1", []string{"b"}},
		{"reward <= -2", []string{"d"}},
		{"ok", []string{"a", "d"}},
		{"ok = false", []string{"b"}},
		{"NOT ok", []string{"b"}},
		{"step = NULL", nil},
		{"at > '2023-01-01T00:00:00Z'", []string{"a", "b", "c", "d"}},
		{"at < '2023-01-01'", nil},
		{"at = 1700000000000000", []string{"a", "b", "c", "d"}}, // microseconds, as generic rows answer
		{"at > 1700000000000000", nil},
		{`"role" = 'user' or ` + "`step`" + ` = 10`, []string{"a", "c"}},
		{"(role = 'user' OR role = 'assistant') AND NOT step = 7", []string{"a"}},
		{"id == 'a'", []string{"a"}},
		{"step = -4 OR small = -4", []string{"d"}},
	} {
		require.Equal(t, c.want, selected(t, mem, c.sql, rows), c.sql)
	}
}

func TestBadPredicatesSayWhy(t *testing.T) {
	for sql, want := range map[string]string{
		"":                       "empty",
		"nope = 1":               `unknown column "nope"`,
		"step = 'x'":             "not a number",
		"role = 5":               "not a 'string'",
		"role LIKE 5":            "a 'pattern'",
		"step LIKE 'x'":          "LIKE applies to a string column",
		"step > 5 AND":           "expected a column or a value at the end",
		"step > 5 extra":         "expected AND, OR or the end",
		"role = 'open":           "unterminated string",
		"step = role":            "two columns",
		"1 = 1":                  "needs a column",
		"tokens = 1":             "cannot filter on column \"tokens\"",
		"at = 1.5":               "not a whole number of microseconds",
		"at = TRUE":              "microseconds since the epoch",
		"(step = 1":              "expected ')'",
		"ok > true":              "compares with = or !=",
		"step IN (1, role)":      "IN lists values",
		"role ~ 'x'":             "unexpected character",
		"step":                   "a comparison",
		strings.Repeat("(", 100): "nests more than",
		strings.Repeat("step = 1 OR ", MaxTerms) + "step = 2":          "more than 128 comparisons",
		"role LIKE '" + strings.Repeat("%a", MaxPatternLength) + "'":   "at most 1024 bytes",
		"step IN (" + strings.Repeat("1, ", MaxInValues) + "1)":        "at most 4096 values",
		"NOT NOT NOT " + strings.Repeat("NOT ", MaxDepth) + "step = 1": "nests more than",
	} {
		_, err := Parse(sql, schema)
		require.ErrorIs(t, err, ErrInvalid, sql)
		require.ErrorContains(t, err, want, sql)
	}
}

// A randomized model: random predicates over random rows (with nulls) select what a row-by-row
// reference evaluation selects, and a row group whose statistics MayMatch rules out holds no
// selected row.
func TestRandomPredicatesMatchARowByRowModelAndPruneSoundly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(7, 7))
	roles := []string{"user", "assistant", "tool", "u%er"}
	for round := range 300 {
		var rows []row
		for i := range 1 + rng.IntN(40) {
			r := row{id: fmt.Sprint(i)}
			if rng.IntN(4) > 0 {
				r.role = p(roles[rng.IntN(len(roles))])
			}
			if rng.IntN(4) > 0 {
				r.step = p(int64(rng.IntN(20) - 5))
			}
			if rng.IntN(4) > 0 {
				r.ok = p(rng.IntN(2) == 0)
			}
			rows = append(rows, r)
		}
		text, ref := randomExpr(rng, 3)
		e, err := Parse(text, schema)
		require.NoError(t, err, text)
		rec := batch(mem, rows)
		keep, err := Select(context.Background(), e, rec)
		rec.Release()
		require.NoError(t, err)
		any := false
		for i, r := range rows {
			require.Equal(t, ref(r) == vTrue, keep[i], "round %d: %s on row %+v", round, text, r)
			any = any || keep[i]
		}
		if any {
			require.True(t, MayMatch(e, statsOf(rows)), "round %d: %s pruned a group holding a match", round, text)
		}
	}
}

// statsOf is what a row group of rows would record.
type testStats map[string]ColumnStats

func (s testStats) Column(c string) (ColumnStats, bool) { cs, ok := s[c]; return cs, ok }

func statsOf(rows []row) Stats {
	st := testStats{}
	add := func(col string, v any, null bool) {
		cs, seen := st[col]
		if !seen {
			cs.AllNull = true
		}
		if null {
			cs.HasNulls = true
			st[col] = cs
			return
		}
		cs.AllNull = false
		if !cs.HasMinMax {
			cs.Min, cs.Max, cs.HasMinMax = v, v, true
		} else {
			switch x := v.(type) {
			case string:
				cs.Min, cs.Max = min(cs.Min.(string), x), max(cs.Max.(string), x)
			case int64:
				cs.Min, cs.Max = min(cs.Min.(int64), x), max(cs.Max.(int64), x)
			case bool:
				cs.Min, cs.Max = cs.Min.(bool) && x, cs.Max.(bool) || x
			}
		}
		st[col] = cs
	}
	for _, r := range rows {
		add("role", deref(r.role), r.role == nil)
		add("step", deref(r.step), r.step == nil)
		add("ok", deref(r.ok), r.ok == nil)
	}
	return st
}

func deref[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}

// randomExpr returns a predicate's text and a reference evaluation of it.
func randomExpr(rng *rand.Rand, depth int) (string, func(row) int8) {
	if depth > 0 && rng.IntN(3) == 0 {
		l, lf := randomExpr(rng, depth-1)
		r, rf := randomExpr(rng, depth-1)
		switch rng.IntN(3) {
		case 0:
			return "(" + l + " AND " + r + ")", func(x row) int8 { return and3(lf(x), rf(x)) }
		case 1:
			return "(" + l + " OR " + r + ")", func(x row) int8 { return or3(lf(x), rf(x)) }
		default:
			return "NOT (" + l + ")", func(x row) int8 { return not3(lf(x)) }
		}
	}
	ops := []string{"=", "!=", "<", "<=", ">", ">="}
	switch rng.IntN(6) {
	case 0:
		op, v := ops[rng.IntN(len(ops))], int64(rng.IntN(20)-5)
		return fmt.Sprintf("step %s %d", op, v), func(x row) int8 {
			if x.step == nil {
				return vNull
			}
			return bool3(holds(op, cmp3(*x.step, v)))
		}
	case 1:
		op, v := ops[rng.IntN(len(ops))], []string{"assistant", "tool", "user", "a", "z"}[rng.IntN(5)]
		return fmt.Sprintf("role %s '%s'", op, v), func(x row) int8 {
			if x.role == nil {
				return vNull
			}
			return bool3(holds(op, strings.Compare(*x.role, v)))
		}
	case 2:
		neg := rng.IntN(2) == 0
		text := "role IS NULL"
		if neg {
			text = "role IS NOT NULL"
		}
		return text, func(x row) int8 { return bool3((x.role == nil) != neg) }
	case 3:
		pat := []string{"u%", "%er", "_ool", "%", "u\\%er", "%s%"}[rng.IntN(6)]
		return fmt.Sprintf("role LIKE '%s'", pat), func(x row) int8 {
			if x.role == nil {
				return vNull
			}
			return bool3(likeOracle(*x.role, pat))
		}
	case 4:
		a, b := int64(rng.IntN(10)), int64(rng.IntN(10))
		return fmt.Sprintf("step IN (%d, %d)", a, b), func(x row) int8 {
			if x.step == nil {
				return vNull
			}
			return bool3(*x.step == a || *x.step == b)
		}
	default:
		v := rng.IntN(2) == 0
		return fmt.Sprintf("ok = %v", v), func(x row) int8 {
			if x.ok == nil {
				return vNull
			}
			return bool3(*x.ok == v)
		}
	}
}

func bool3(b bool) int8 {
	if b {
		return vTrue
	}
	return vFalse
}
func and3(a, b int8) int8 {
	switch {
	case a == vFalse || b == vFalse:
		return vFalse
	case a == vNull || b == vNull:
		return vNull
	}
	return vTrue
}
func or3(a, b int8) int8 {
	switch {
	case a == vTrue || b == vTrue:
		return vTrue
	case a == vNull || b == vNull:
		return vNull
	}
	return vFalse
}
func not3(a int8) int8 {
	if a == vNull {
		return vNull
	}
	return 1 - a
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"step > 5 AND role = 'user'", "role LIKE 'a%' OR NOT (step IN (1,2))", "(((", "'", "step BETWEEN 1 AND", "\"x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s, schema)
		if err == nil {
			_ = e.String()
			_ = MayMatch(e, testStats{})
		}
	})
}
