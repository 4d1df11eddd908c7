// Reads of one table version: point lookups by key through the key index, and full scans that
// stream each fragment's live rows (deletion vectors and tombstones applied) with projection.
package table

import (
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/fragment"
)

// userColumns returns the named columns, or every user column when names is empty; unknown
// names are an ErrSchema.
func userColumns(m *Manifest, names []string) ([]string, error) {
	if len(names) == 0 {
		for _, f := range userFields(m.Schema()) {
			names = append(names, f.Name)
		}
		return names, nil
	}
	for _, n := range names {
		if len(m.Schema().FieldIndices(n)) == 0 {
			return nil, schemaErr("no column %q", n)
		}
	}
	return names, nil
}

// Get returns the live row of key in version m as a one-row record of the named columns (every
// user column when none), or nil when the key is absent or deleted. The caller releases it.
func (t *Table) Get(ctx context.Context, m *Manifest, key string, columns []string) (arrow.RecordBatch, error) {
	names, err := userColumns(m, columns)
	if err != nil {
		return nil, err
	}
	locs, err := t.locate(ctx, m, []string{key})
	if err != nil {
		return nil, err
	}
	loc, ok := locs[key]
	if !ok || loc.tombstone {
		return nil, nil
	}
	f, _ := m.Fragment(loc.fragment)
	ft, err := t.reader.Footer(ctx, f.Ref())
	if err != nil {
		return nil, err
	}
	rg, offset := ft.RowGroupOf(loc.row)
	if rg < 0 {
		return nil, fmt.Errorf("table: fragment %s has no row %d", f.Path, loc.row)
	}
	return t.reader.ReadRowsAt(ctx, f.Ref(), fragment.Columns{Schema: m.Schema(), Names: names}, rg, []int64{offset})
}

// ScanOptions select what Scan returns.
type ScanOptions struct {
	Columns           []string // user columns to return (all when empty)
	IncludeInternal   bool     // also return _seq and _tombstone
	IncludeTombstones bool     // return tombstone rows too
}

// Scan streams the live rows of version m, fragment by fragment, as records of at most
// fragment.ScanBatchRows rows. fn must not keep a record after returning without retaining it; an error
// from fn ends the scan and is returned as is.
func (t *Table) Scan(ctx context.Context, m *Manifest, opts ScanOptions, fn func(arrow.RecordBatch) error) error {
	names, err := userColumns(m, opts.Columns)
	if err != nil {
		return err
	}
	out := names
	if opts.IncludeInternal {
		out = append(append([]string{}, names...), SeqColumn, TombstoneColumn)
	}
	read := out
	needTomb := !opts.IncludeTombstones && !opts.IncludeInternal
	if needTomb {
		read = append(append([]string{}, out...), TombstoneColumn)
	}
	for _, f := range m.Fragments {
		if f.LiveRows() == 0 {
			continue
		}
		if err := t.scanFragment(ctx, m, f, read, len(out), !opts.IncludeTombstones, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanFragment streams one fragment. read lists the columns to read; the first keep of them are
// returned; when dropTombstones, read must contain _tombstone.
func (t *Table) scanFragment(ctx context.Context, m *Manifest, f Fragment, read []string, keep int, dropTombstones bool, fn func(arrow.RecordBatch) error) error {
	del, err := t.deletions(ctx, f)
	if err != nil {
		return err
	}
	schema := m.Schema()
	return t.reader.Scan(ctx, f.Ref(), read, func(batch arrow.RecordBatch, offset int64) error {
		return t.emitBatch(ctx, batch, schema, read, keep, offset, del, dropTombstones, fn)
	})
}

// maxSliceRuns: a batch whose live rows form at most this many runs is emitted as zero-copy
// slices; a more fragmented one is compacted with one copy.
const maxSliceRuns = 8

// emitBatch lays a fragment batch out as the first keep columns of read (nulls for columns the
// fragment predates), drops deleted rows and, when asked, tombstones, and passes the result to fn.
func (t *Table) emitBatch(ctx context.Context, batch arrow.RecordBatch, schema *arrow.Schema, read []string, keep int, offset int64, del *roaring.Bitmap, dropTombstones bool, fn func(arrow.RecordBatch) error) error {
	n := batch.NumRows()
	cols := make([]arrow.Array, keep)
	fields := make([]arrow.Field, keep)
	for i, name := range read[:keep] {
		fields[i] = schema.Field(schema.FieldIndices(name)[0])
		if bi := batch.Schema().FieldIndices(name); len(bi) > 0 {
			cols[i] = batch.Column(bi[0])
			cols[i].Retain()
		} else {
			cols[i] = arrowutil.Nulls(fields[i].Type, int(n)) // shared, immutable
		}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()

	var tombs *array.Boolean
	if dropTombstones {
		tombs = batch.Column(batch.Schema().FieldIndices(TombstoneColumn)[0]).(*array.Boolean)
	}
	// Runs [start, end) of surviving rows.
	var runs [][2]int64
	start := int64(-1)
	for i := int64(0); i < n; i++ {
		dead := del.Contains(uint32(offset+i)) || (tombs != nil && tombs.Value(int(i)))
		switch {
		case !dead && start < 0:
			start = i
		case dead && start >= 0:
			runs = append(runs, [2]int64{start, i})
			start = -1
		}
	}
	if start >= 0 {
		runs = append(runs, [2]int64{start, n})
	}
	if len(runs) == 1 && runs[0] == [2]int64{0, n} {
		return fn(rec)
	}
	if len(runs) <= maxSliceRuns {
		for _, r := range runs {
			part := rec.NewSlice(r[0], r[1])
			err := fn(part)
			part.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	var keepRows []int64
	for _, r := range runs {
		for i := r[0]; i < r[1]; i++ {
			keepRows = append(keepRows, i)
		}
	}
	sel, err := arrowutil.Take(ctx, t.mem, rec, keepRows)
	if err != nil {
		return err
	}
	defer sel.Release()
	return fn(sel)
}

// Lookup returns the live row of each key present in version m (tombstones included, flagged),
// without reading payload columns: through the key index, scanning the key columns of
// uncovered fragments. keys need not be sorted; absent keys are missing from the result.
func (t *Table) Lookup(ctx context.Context, m *Manifest, keys []string) (map[string]RowRef, error) {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	locs, err := t.locate(ctx, m, sorted)
	if err != nil {
		return nil, err
	}
	out := make(map[string]RowRef, len(locs))
	for k, l := range locs {
		out[k] = RowRef{Key: k, Fragment: l.fragment, Row: l.row, Seq: l.seq, Tombstone: l.tombstone}
	}
	return out, nil
}

// RowKeys fills in the key and seq of each ref (by its fragment and row) from version m's
// fragments (for searches: the pages read stay cached, as ReadRowsForSearch keeps them).
func (t *Table) RowKeys(ctx context.Context, m *Manifest, refs []RowRef) error {
	// Rows sought by a search lie anywhere in their fragments: read them a few at a time, so that
	// each read is a point read (fragment.PointReadRows) rather than a run spanning them all.
	for start := 0; start < len(refs); start += fragment.PointReadRows {
		part := refs[start:min(start+fragment.PointReadRows, len(refs))]
		rec, err := t.ReadRowsForSearch(ctx, m, part, []string{m.KeyColumn, SeqColumn})
		if err != nil {
			return err
		}
		keys, ok1 := rec.Column(0).(*array.String)
		seqs, ok2 := rec.Column(1).(*array.Uint64)
		if !ok1 || !ok2 {
			rec.Release()
			return fmt.Errorf("table: unexpected key or seq column types (%s, %s)", rec.Column(0).DataType(), rec.Column(1).DataType())
		}
		for i := range part {
			part[i].Key, part[i].Seq = keys.Value(i), seqs.Value(i)
		}
		rec.Release()
	}
	return nil
}
