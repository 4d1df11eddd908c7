// What a fragment's chunk statistics say about its row groups' values, for pruning: whether a
// row group may hold a value, and each column's min, max and nulls as predicates read them.
package fragment

import (
	"math"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/strata-store/strata/storage/predicate"
)

// MayHold reports, from its chunk statistics, whether flat column col of row group rg may hold
// the non-null value want (a string, bool, int, int64 or float64).
func (ft *Footer) MayHold(rg int, col string, want any) bool {
	md := ft.md
	leaf, ok := ft.flatLeaves[col]
	if !ok {
		// A flat column the fragment predates is null in every row: nothing equals a value.
		// (A nested column has no leaf of that name; filters are on flat columns.)
		return false
	}
	meta := md.RowGroup(rg)
	cc, stats := leafStats(meta, leaf)
	if stats == nil {
		return true
	}
	if nullInEveryRow(meta, cc, stats) {
		return false
	}
	if !stats.HasMinMax() {
		return true
	}
	if w, ok := want.(int); ok {
		want = int64(w)
	}
	desc := md.Schema.Column(leaf)
	if it, ok := desc.LogicalType().(schema.IntLogicalType); ok && !it.IsSigned() {
		return true // unsigned columns order their statistics differently: not judged here
	}
	switch s := stats.(type) {
	case *metadata.ByteArrayStatistics:
		w, ok := want.(string)
		return !ok || (w >= string(s.Min()) && w <= string(s.Max()))
	case *metadata.Int64Statistics:
		w, ok := want.(int64)
		return !ok || (w >= s.Min() && w <= s.Max())
	case *metadata.Int32Statistics:
		w, ok := want.(int64)
		if !ok {
			return true
		}
		if w < math.MinInt32 || w > math.MaxInt32 {
			return false // no 32-bit value equals it
		}
		return int32(w) >= s.Min() && int32(w) <= s.Max()
	case *metadata.BooleanStatistics:
		w, ok := want.(bool)
		return !ok || (w && s.Max()) || (!w && !s.Min())
	}
	return true
}

// RowGroupStats are row group rg's column statistics, as the predicate package reads them.
func (ft *Footer) RowGroupStats(rg int) predicate.Stats { return groupStats{ft, rg} }

// groupStats are one row group's statistics, as the predicate package reads them.
type groupStats struct {
	ft *Footer
	rg int
}

func (g groupStats) Column(col string) (predicate.ColumnStats, bool) {
	md := g.ft.md
	leaf, ok := g.ft.flatLeaves[col]
	if !ok {
		// A flat column the fragment predates is null in every row. (Nested columns are not
		// filterable, so no predicate names one.)
		return predicate.ColumnStats{AllNull: true}, true
	}
	meta := md.RowGroup(g.rg)
	cc, stats := leafStats(meta, leaf)
	if stats == nil {
		return predicate.ColumnStats{}, false
	}
	out := predicate.ColumnStats{AllNull: nullInEveryRow(meta, cc, stats), HasNulls: !stats.HasNullCount() || stats.NullCount() > 0}
	if !stats.HasMinMax() || out.AllNull {
		return out, true
	}
	desc := md.Schema.Column(leaf)
	if it, ok := desc.LogicalType().(schema.IntLogicalType); ok && !it.IsSigned() {
		return out, true // unsigned columns order their statistics differently: not judged here
	}
	switch s := stats.(type) {
	case *metadata.ByteArrayStatistics:
		out.Min, out.Max = string(s.Min()), string(s.Max())
	case *metadata.Int64Statistics:
		out.Min, out.Max = s.Min(), s.Max()
	case *metadata.Int32Statistics:
		out.Min, out.Max = int64(s.Min()), int64(s.Max())
	case *metadata.BooleanStatistics:
		out.Min, out.Max = s.Min(), s.Max()
	case *metadata.Float64Statistics:
		out.Min, out.Max = s.Min(), s.Max()
	case *metadata.Float32Statistics:
		out.Min, out.Max = float64(s.Min()), float64(s.Max())
	default:
		return out, true
	}
	out.HasMinMax = true
	return out, true
}
