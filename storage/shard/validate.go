// Validation of batches at the two edges of the WAL: a client's batch before anything of it is
// durable (ValidateAppend), and a batch decoded from WAL bytes before it enters a memtable or a
// merge (validateStamped). Arrow arrays are trusted by every later step — the committer, the
// memtable index, key files, merges — so a batch with backwards offsets, a short buffer or invalid
// UTF-8 must never get past these checks: it would panic in the commit goroutine, and once in the
// WAL it would panic again at every replay.
package shard

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/table"
)

// ValidateAppend checks a client batch against the store's schema: every column known, user
// (not `_`-prefixed), present once, of the schema's type (or one Align widens), as long as the
// batch, structurally valid with every offset, length and UTF-8 string checked (array.ValidateFull),
// nulls only in nullable columns, and every key non-empty. Errors wrap table.ErrSchema and name
// the column; nothing of the batch is written.
func ValidateAppend(rec arrow.RecordBatch, schema *arrow.Schema, keyColumn string) error {
	n := rec.NumRows()
	seen := make(map[string]bool, rec.NumCols())
	for i := range rec.Schema().NumFields() {
		f := rec.Schema().Field(i)
		if strings.HasPrefix(f.Name, "_") || len(schema.FieldIndices(f.Name)) == 0 {
			return fmt.Errorf("%w: column %q is not in the store's schema", table.ErrSchema, f.Name)
		}
		if seen[f.Name] {
			return fmt.Errorf("%w: column %q appears more than once", table.ErrSchema, f.Name)
		}
		seen[f.Name] = true
		if err := validateColumn(rec.Column(i), f.Name, n); err != nil {
			return err
		}
		want := schema.Field(schema.FieldIndices(f.Name)[0])
		if !want.Nullable && rec.Column(i).NullN() > 0 {
			return fmt.Errorf("%w: column %q does not accept nulls (%d in the batch)", table.ErrSchema, f.Name, rec.Column(i).NullN())
		}
	}
	idx := rec.Schema().FieldIndices(keyColumn)
	if len(idx) == 0 {
		return fmt.Errorf("%w: the batch has no key column %q", table.ErrSchema, keyColumn)
	}
	return validateKeys(rec.Column(idx[0]), keyColumn)
}

// validateKeys requires a non-null, non-empty string key in every row (UTF-8 is checked by
// validateColumn). Any other type is left to Align, which names the expected type.
func validateKeys(col arrow.Array, keyColumn string) error {
	if col.NullN() > 0 {
		return fmt.Errorf("%w: key column %q has %d nulls", table.ErrSchema, keyColumn, col.NullN())
	}
	type stringish interface{ ValueLen(int) int }
	if s, ok := col.(stringish); ok {
		for i := 0; i < col.Len(); i++ {
			if s.ValueLen(i) == 0 {
				return fmt.Errorf("%w: row %d: key column %q is empty", table.ErrSchema, i, keyColumn)
			}
		}
	}
	return nil
}

// validateColumn checks one column's buffers in full (arrowutil.ValidateColumn); the error wraps
// table.ErrSchema and names the column.
func validateColumn(col arrow.Array, name string, rows int64) error {
	if err := arrowutil.ValidateColumn(col, rows); err != nil {
		return fmt.Errorf("%w: column %q is not valid Arrow data: %w", table.ErrSchema, name, err)
	}
	return nil
}

// validateColumns checks every column of a batch decoded from WAL or generation bytes in full
// (validateColumn). A failure is ErrCorrupt: the bytes passed their checksums but are not a batch
// this store could have written.
func validateColumns(rec arrow.RecordBatch) error {
	for i := range rec.Schema().NumFields() {
		if err := validateColumn(rec.Column(i), rec.Schema().Field(i).Name, rec.NumRows()); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	return nil
}

// validateIndexed checks that a decoded batch laid out as the table schema has the columns the
// memtable and merges index — key, _seq, _tombstone — once, of their types, without nulls.
func validateIndexed(rec arrow.RecordBatch, keyColumn string) error {
	s := rec.Schema()
	for _, want := range []struct {
		name string
		id   arrow.Type
	}{{keyColumn, arrow.STRING}, {table.SeqColumn, arrow.UINT64}, {table.TombstoneColumn, arrow.BOOL}} {
		idx := s.FieldIndices(want.name)
		if len(idx) != 1 || rec.Column(idx[0]).DataType().ID() != want.id || rec.Column(idx[0]).NullN() > 0 {
			return fmt.Errorf("%w: column %q is missing, of another type or has nulls", ErrCorrupt, want.name)
		}
	}
	return nil
}
