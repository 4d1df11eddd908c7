// Package arrowutil holds the Arrow record helpers the storage packages share: concatenating
// records of one schema and selecting rows by index. Results are new records the caller releases.
package arrowutil

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/compute/exec"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Concat joins records of one schema into one (an empty record of schema when there are none).
// A single record is returned retained, without copying; a nullable column that is null in every
// part becomes a shared all-null array (see Nulls) instead of a copy.
func Concat(schema *arrow.Schema, parts []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	for c := range cols {
		if len(parts) == 0 {
			cols[c] = array.MakeArrayOfNull(mem, schema.Field(c).Type, 0)
			continue
		}
		arrs := make([]arrow.Array, len(parts))
		nulls := true
		for i, p := range parts {
			arrs[i] = p.Column(c)
			nulls = nulls && allNull(arrs[i])
		}
		if nulls && schema.Field(c).Nullable {
			cols[c] = Nulls(schema.Field(c).Type, int(rows))
			continue
		}
		col, err := array.Concatenate(arrs, mem)
		if err != nil {
			for _, done := range cols[:c] {
				done.Release()
			}
			return nil, err
		}
		cols[c] = col
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// Take returns the rows of rec at indices, in that order (copied run by run when they come in long
// runs: takeruns.go).
func Take(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, indices []int64) (arrow.RecordBatch, error) {
	parts := []arrow.RecordBatch{rec}
	if runs, ok := rowRunsOf(parts, indices); ok {
		return gatherRuns(mem, rec.Schema(), parts, runs, len(indices))
	}
	return takeRows(ctx, mem, rec, indices)
}

// takeRows is Take row by row (Arrow's take kernel).
func takeRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, indices []int64) (arrow.RecordBatch, error) {
	b := array.NewInt64Builder(mem)
	b.AppendValues(indices, nil)
	idx := b.NewArray()
	b.Release()
	defer idx.Release()
	id, rd := compute.NewDatum(idx), compute.NewDatum(rec)
	defer id.Release()
	defer rd.Release()
	out, err := compute.Take(exec.WithAllocator(ctx, mem), *compute.DefaultTakeOptions(), rd, id)
	if err != nil {
		return nil, fmt.Errorf("select rows: %w", err)
	}
	return out.(*compute.RecordDatum).Value, nil
}

// drain reads every record of rd, retained, then releases rd.
func drain(rd *ipc.Reader) ([]arrow.RecordBatch, *arrow.Schema, error) {
	defer rd.Release()
	var parts []arrow.RecordBatch
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		parts = append(parts, rec)
	}
	if err := rd.Err(); err != nil {
		for _, p := range parts {
			p.Release()
		}
		return nil, nil, fmt.Errorf("arrow stream: %w", err)
	}
	return parts, rd.Schema(), nil
}
