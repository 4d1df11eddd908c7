// Row-group pruning for equality filters: a scan with filters skips the rows of a row group whose
// column statistics prove that none of its rows can match (a value outside the chunk's
// [min, max], or a column that is null in every row), so a selective filter on a clustered
// column reads the row groups that hold its value and not the others.
package table

import (
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
	memo    map[[2]uint64]bool
}

// NewRowGroupPruner returns a pruner for version m and filters.
func (t *Table) NewRowGroupPruner(m *Manifest, filters map[string]any) *RowGroupPruner {
	return &RowGroupPruner{t: t, m: m, filters: filters, memo: map[[2]uint64]bool{}}
}

// MayMatch reports whether row r may satisfy every filter: false only when its row group's
// statistics rule out every row of the group.
func (p *RowGroupPruner) MayMatch(ctx context.Context, r RowRef) (bool, error) {
	if len(p.filters) == 0 {
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
