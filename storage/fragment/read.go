// Whole row groups read through pqarrow, and laying the columns read out as the caller's schema
// orders and types them (columns a fragment predates or does not store are nulls).
package fragment

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/strata-store/strata/storage/arrowutil"
)

// leafColumns maps top-level column names to Parquet leaf column indices; names the fragment
// does not have (columns added after it was written) are returned in missing.
func leafColumns(fr *pqarrow.FileReader, names []string) (leaves []int, missing []string) {
	for _, name := range names {
		found := false
		for _, sf := range fr.Manifest.Fields {
			if sf.Field.Name == name {
				leaves = appendLeaves(leaves, &sf)
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, name)
		}
	}
	return leaves, missing
}

func appendLeaves(out []int, sf *pqarrow.SchemaField) []int {
	if len(sf.Children) == 0 {
		return append(out, sf.ColIndex)
	}
	for i := range sf.Children {
		out = appendLeaves(out, &sf.Children[i])
	}
	return out
}

// Columns names what a read returns: the columns Names, in that order, typed as Schema (the
// table's schema) types them. Columns a fragment predates or does not store come back as nulls.
type Columns struct {
	Schema *arrow.Schema
	Names  []string
	// CachePages: a point read keeps the data pages it decodes in the process's object cache
	// (a fragment is immutable), for reads that come back to the same rows again and again
	// (searches rank the same candidates for similar queries). Other reads leave the cache to
	// what every read needs (footers, page indexes, dictionaries).
	CachePages bool
}

// ReadRowGroups reads the columns cols names of the given row groups (nil: all) as one record;
// their byte span is fetched in one ranged read when the footer is cached.
func (rd *Reader) ReadRowGroups(ctx context.Context, f Ref, cols Columns, rowGroups []int) (arrow.RecordBatch, error) {
	fr, err := rd.openFragment(ctx, f, accessRanges, nil, rowGroups...)
	if err != nil {
		return nil, err
	}
	defer fr.ParquetReader().Close()
	fr.Props.Parallel = true // columns decode concurrently
	groups := rowGroupsOrAll(fr, rowGroups)
	var n int64
	for _, g := range groups {
		n += fr.ParquetReader().MetaData().RowGroup(g).NumRows()
	}
	read := storedColumns(fr, cols.Names, groups)
	if len(read) == 0 {
		return rd.layoutColumns(nil, n, cols.Schema, cols.Names)
	}
	leaves, _ := leafColumns(fr, read)
	tbl, err := fr.ReadRowGroups(ctx, leaves, groups)
	if err != nil {
		return nil, fmt.Errorf("fragment: read %s: %w", f.Path, err)
	}
	defer tbl.Release()
	return rd.layoutColumns(tbl, n, cols.Schema, cols.Names)
}

// Scan streams every row of the columns names (as the fragment stores them: a column it lacks
// is left out, for the caller to lay out) in batches of at most ScanBatchRows, the file fetched
// in one read. fn gets each batch and the fragment row of its first row; it must not keep the
// batch after returning without retaining it, and an error from fn ends the scan and is
// returned as is.
func (rd *Reader) Scan(ctx context.Context, f Ref, names []string, fn func(batch arrow.RecordBatch, offset int64) error) error {
	fr, err := rd.openFragment(ctx, f, accessWhole, nil)
	if err != nil {
		return err
	}
	defer fr.ParquetReader().Close()
	fr.Props.Parallel = true // columns decode concurrently
	leaves, _ := leafColumns(fr, names)
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return fmt.Errorf("fragment: scan %s: %w", f.Path, err)
	}
	defer rr.Release()
	var offset int64
	for rr.Next() {
		batch := rr.RecordBatch()
		err := fn(batch, offset)
		offset += batch.NumRows()
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("fragment: scan %s: %w", f.Path, err)
	}
	return nil
}

// layoutColumns returns the named columns of tbl, n rows (in that order, as typed by schema), as
// one record; columns tbl lacks (the fragment predates them, or they were not read because they
// hold only nulls; tbl may be nil) are shared all-null arrays.
func (rd *Reader) layoutColumns(tbl arrow.Table, n int64, schema *arrow.Schema, names []string) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(names))
	fields := make([]arrow.Field, len(names))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, name := range names {
		fi := schema.FieldIndices(name)
		if len(fi) == 0 {
			return nil, fmt.Errorf("fragment: no column %q", name)
		}
		fields[i] = schema.Field(fi[0])
		var ti []int
		if tbl != nil {
			ti = tbl.Schema().FieldIndices(name)
		}
		if len(ti) == 0 {
			cols[i] = arrowutil.Nulls(fields[i].Type, int(n))
			continue
		}
		col, err := concatChunks(tbl.Column(ti[0]).Data(), rd.Mem)
		if err != nil {
			return nil, err
		}
		cols[i] = col
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n), nil
}

func rowGroupsOrAll(fr *pqarrow.FileReader, rowGroups []int) []int {
	if rowGroups != nil {
		return rowGroups
	}
	all := make([]int, fr.ParquetReader().NumRowGroups())
	for i := range all {
		all[i] = i
	}
	return all
}

func concatChunks(c *arrow.Chunked, mem memory.Allocator) (arrow.Array, error) {
	chunks := c.Chunks()
	switch len(chunks) {
	case 0:
		return array.MakeArrayOfNull(mem, c.DataType(), 0), nil
	case 1:
		chunks[0].Retain()
		return chunks[0], nil
	}
	return array.Concatenate(chunks, mem)
}
