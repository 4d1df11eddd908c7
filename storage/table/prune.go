// Row-group pruning for equality filters: a scan with filters skips the rows of a row group whose
// column statistics prove that none of its rows can match (a value outside the chunk's
// [min, max], or a column that is null in every row), so a selective filter on a clustered
// column reads the row groups that hold its value and not the others.
package table

import (
	"github.com/strata-store/strata/storage/predicate"

	"context"
	"math"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// RowGroupPruner answers, for one version and one set of equality filters, whether a row's row
// group may hold matching rows. It remembers each row group's answer; one scan page uses one.
type RowGroupPruner struct {
	t       *Table
	m       *Manifest
	filters map[string]any // column == value (string, bool, int/int64, float64), ANDed
	where   predicate.Expr // and this predicate, when set
	memo    map[[2]uint64]bool
}

// NewRowGroupPruner returns a pruner for version m, filters and where (nil: none).
func (t *Table) NewRowGroupPruner(m *Manifest, filters map[string]any, where predicate.Expr) *RowGroupPruner {
	return &RowGroupPruner{t: t, m: m, filters: filters, where: where, memo: map[[2]uint64]bool{}}
}

// MayMatch reports whether row r may satisfy every filter: false only when its row group's
// statistics rule out every row of the group.
func (p *RowGroupPruner) MayMatch(ctx context.Context, r RowRef) (bool, error) {
	if len(p.filters) == 0 && p.where == nil {
		return true, nil
	}
	f, ok := p.m.Fragment(r.Fragment)
	if !ok {
		return true, nil
	}
	ft, err := p.t.fragmentFooter(ctx, f)
	if err != nil {
		return false, err
	}
	rg, _ := ft.rowGroupOf(r.Row)
	if rg < 0 {
		return true, nil // not ours to judge: the read reports it
	}
	key := [2]uint64{f.ID, uint64(rg)}
	if may, ok := p.memo[key]; ok {
		return may, nil
	}
	may := true
	for col, want := range p.filters {
		if !chunkMayHold(ft, rg, col, want) {
			may = false
			break
		}
	}
	if may && p.where != nil {
		may = predicate.MayMatch(p.where, groupStats{ft, rg})
	}
	p.memo[key] = may
	return may, nil
}

// chunkMayHold reports whether column col of row group rg may hold the non-null value want.
func chunkMayHold(ft *footer, rg int, col string, want any) bool {
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

// groupStats are one row group's statistics, as the predicate package reads them.
type groupStats struct {
	ft *footer
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
