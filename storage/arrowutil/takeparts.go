package arrowutil

// Selecting rows from several records of one schema without joining them first.

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/compute/exec"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TakeParts is Take over the rows of parts laid end to end (indices count across them; every
// part has the same schema). Rows that come in long runs are copied run by run (takeruns.go).
// Otherwise columns of primitive and binary types are gathered from the parts directly (Arrow's
// chunked take), so a merge of many WAL batches copies each selected value once instead of
// joining every batch first; a nullable column null in every part becomes a shared all-null
// array; other types are joined, then taken.
func TakeParts(ctx context.Context, mem memory.Allocator, parts []arrow.RecordBatch, indices []int64) (arrow.RecordBatch, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("select rows: no records")
	}
	schema := parts[0].Schema()
	for _, p := range parts[1:] {
		if !p.Schema().Equal(schema) {
			return nil, fmt.Errorf("select rows: the records' schemas differ")
		}
	}
	if runs, ok := rowRunsOf(parts, indices); ok {
		return gatherRuns(mem, schema, parts, runs, len(indices))
	}
	return takePartsRowByRow(ctx, mem, schema, parts, indices)
}

// takePartsRowByRow is TakeParts with Arrow's take kernels, row by row.
func takePartsRowByRow(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, parts []arrow.RecordBatch, indices []int64) (arrow.RecordBatch, error) {
	if len(parts) == 1 {
		return takeRows(ctx, mem, parts[0], indices)
	}
	b := array.NewInt64Builder(mem)
	b.AppendValues(indices, nil)
	idx := b.NewArray()
	b.Release()
	defer idx.Release()
	idxDatum := compute.NewDatum(idx)
	defer idxDatum.Release()
	ctx = exec.WithAllocator(ctx, mem)

	cols := make([]arrow.Array, 0, schema.NumFields())
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	chunks := make([]arrow.Array, len(parts))
	for c, f := range schema.Fields() {
		nulls := true
		for i, p := range parts {
			chunks[i] = p.Column(c)
			nulls = nulls && allNull(chunks[i])
		}
		if nulls && f.Nullable {
			cols = append(cols, Nulls(f.Type, len(indices)))
			continue
		}
		col, err := takeChunks(ctx, mem, f.Type, chunks, idxDatum)
		if err != nil {
			release()
			return nil, fmt.Errorf("select rows of column %q: %w", f.Name, err)
		}
		cols = append(cols, col)
	}
	defer release()
	return array.NewRecordBatch(schema, cols, int64(len(indices))), nil
}

// takeChunks takes indices from the column whose chunks are given, as one array.
func takeChunks(ctx context.Context, mem memory.Allocator, dt arrow.DataType, chunks []arrow.Array, indices compute.Datum) (arrow.Array, error) {
	chunked := arrow.NewChunked(dt, chunks)
	defer chunked.Release()
	values := compute.NewDatum(chunked)
	defer values.Release()
	out, err := compute.Take(ctx, *compute.DefaultTakeOptions(), values, indices)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	switch d := out.(type) {
	case *compute.ArrayDatum:
		return d.MakeArray(), nil
	case *compute.ChunkedDatum:
		taken := d.Value.Chunks()
		if len(taken) == 1 {
			taken[0].Retain()
			return taken[0], nil
		}
		return array.Concatenate(taken, mem)
	}
	return nil, fmt.Errorf("unexpected take result %s", out.Kind())
}
