// Reads of one table version: point lookups by key through the key index, and full scans that
// stream each fragment's live rows (deletion vectors and tombstones applied) with projection.
package table

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
func (t *Table) Get(ctx context.Context, m *Manifest, key string, columns []string) (arrow.Record, error) {
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
	fr, err := t.openFragment(ctx, f, false)
	if err != nil {
		return nil, err
	}
	rg, offset := rowGroupOf(fr.ParquetReader().MetaData(), loc.row)
	fr.ParquetReader().Close()
	if rg < 0 {
		return nil, fmt.Errorf("table: fragment %s has no row %d", f.Path, loc.row)
	}
	rec, err := t.readFragment(ctx, f, m.Schema(), names, []int{rg}, false)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return rec.NewSlice(offset, offset+1), nil
}

// ScanOptions select what Scan returns.
type ScanOptions struct {
	Columns           []string // user columns to return (all when empty)
	IncludeInternal   bool     // also return _seq and _tombstone
	IncludeTombstones bool     // return tombstone rows too
}

// errStopScan lets a callback end a scan early without an error.
var errStopScan = errors.New("stop scan")

// StopScan is returned by a Scan callback to end the scan early; Scan then returns nil.
var StopScan = errStopScan

// Scan streams the live rows of version m, fragment by fragment, as records of at most
// rowGroupRows rows. fn must not keep a record after returning without retaining it.
func (t *Table) Scan(ctx context.Context, m *Manifest, opts ScanOptions, fn func(arrow.Record) error) error {
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
		err := t.scanFragment(ctx, m, f, read, len(out), !opts.IncludeTombstones, fn)
		if errors.Is(err, errStopScan) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scanFragment streams one fragment. read lists the columns to read; the first keep of them are
// returned; when dropTombstones, read must contain _tombstone.
func (t *Table) scanFragment(ctx context.Context, m *Manifest, f Fragment, read []string, keep int, dropTombstones bool, fn func(arrow.Record) error) error {
	del, err := t.deletions(ctx, f)
	if err != nil {
		return err
	}
	fr, err := t.openFragment(ctx, f, true)
	if err != nil {
		return err
	}
	defer fr.ParquetReader().Close()
	leaves, missing := leafColumns(fr, read)
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return fmt.Errorf("table: scan %s: %w", f.Path, err)
	}
	defer rr.Release()
	schema := m.Schema()
	var offset int64
	for rr.Next() {
		batch := rr.Record()
		rec, err := t.shapeBatch(ctx, batch, schema, read, keep, missing, offset, del, dropTombstones)
		offset += batch.NumRows()
		if err != nil {
			return err
		}
		if rec == nil {
			continue
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, errStopScan) {
		return fmt.Errorf("table: scan %s: %w", f.Path, err)
	}
	return nil
}

// shapeBatch lays a fragment batch out as the first keep columns of read (nulls for columns the
// fragment predates) and drops deleted rows and, when asked, tombstones. It returns nil when no
// row survives. Without anything to drop the columns are passed through without copying.
func (t *Table) shapeBatch(ctx context.Context, batch arrow.Record, schema *arrow.Schema, read []string, keep int, missing []string, offset int64, del interface{ Contains(uint32) bool }, dropTombstones bool) (arrow.Record, error) {
	n := batch.NumRows()
	cols := make([]arrow.Array, len(read))
	fields := make([]arrow.Field, len(read))
	for i, name := range read {
		fields[i] = schema.Field(schema.FieldIndices(name)[0])
		if bi := batch.Schema().FieldIndices(name); len(bi) > 0 {
			cols[i] = batch.Column(bi[0])
			cols[i].Retain()
		} else {
			cols[i] = array.MakeArrayOfNull(t.mem, fields[i].Type, int(n))
		}
	}
	full := array.NewRecord(arrow.NewSchema(fields, nil), cols, n)
	for _, c := range cols {
		c.Release()
	}
	defer full.Release()

	var tombs *array.Boolean
	if dropTombstones {
		tombs = full.Column(len(read) - 1).(*array.Boolean)
	}
	var keepRows []int64
	dropped := false
	for i := int64(0); i < n; i++ {
		if del.Contains(uint32(offset+i)) || (tombs != nil && tombs.Value(int(i))) {
			dropped = true
			continue
		}
		keepRows = append(keepRows, i)
	}
	projected := full.NewSlice(0, n)
	if keep < len(read) {
		projected.Release()
		projected = array.NewRecord(arrow.NewSchema(fields[:keep], nil), full.Columns()[:keep], n)
	}
	if !dropped {
		return projected, nil
	}
	defer projected.Release()
	if len(keepRows) == 0 {
		return nil, nil
	}
	return takeRows(ctx, t.mem, projected, keepRows)
}
