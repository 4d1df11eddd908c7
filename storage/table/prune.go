// Row-group pruning for equality filters: a scan with filters skips the rows of a row group whose
// column statistics prove that none of its rows can match (a value outside the chunk's
// [min, max], or a column that is null in every row), so a selective filter on a clustered
// column reads the row groups that hold its value and not the others.
package table

import (
	"github.com/strata-store/strata/storage/predicate"

	"context"
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
	ft, err := p.t.reader.Footer(ctx, f.Ref())
	if err != nil {
		return false, err
	}
	rg, _ := ft.RowGroupOf(r.Row)
	if rg < 0 {
		return true, nil // not ours to judge: the read reports it
	}
	key := [2]uint64{f.ID, uint64(rg)}
	if may, ok := p.memo[key]; ok {
		return may, nil
	}
	may := true
	for col, want := range p.filters {
		if !ft.MayHold(rg, col, want) {
			may = false
			break
		}
	}
	if may && p.where != nil {
		may = predicate.MayMatch(p.where, ft.RowGroupStats(rg))
	}
	p.memo[key] = may
	return may, nil
}
