// rowBuilder: appends decoded rows to Arrow builders with nulls deferred. A sparse schema (a
// rollout row sets ~10 of ~40 columns) would otherwise append a null to ~30 builders per row;
// here a run of nulls is appended in one call when the column's next value arrives, and a column
// null in every row is never built at all (it becomes a shared all-null array).
package api

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/storage/arrowutil"
)

type rowBuilder struct {
	schema    *arrow.Schema
	b         *array.RecordBuilder
	fields    []arrow.Field
	isJSON    []bool // per column: holds JSON documents (codec.json)
	vectorDim []int  // per column: a vector's dimension (codec.vectors), 0 for other columns
	pending   []int  // per column: nulls not yet appended
	valued    []bool // per column: some row had a value
	rows      int
}

func (c codec) newRowBuilder(mem memory.Allocator) *rowBuilder {
	fields := c.schema.Fields()
	rb := &rowBuilder{schema: c.schema, b: array.NewRecordBuilder(mem, c.schema), fields: fields,
		isJSON: make([]bool, len(fields)), vectorDim: make([]int, len(fields)), pending: make([]int, len(fields)), valued: make([]bool, len(fields))}
	for i, f := range fields {
		rb.isJSON[i] = c.json[f.Name]
		rb.vectorDim[i] = c.vectors[f.Name]
	}
	return rb
}

func (rb *rowBuilder) release() { rb.b.Release() }

// field returns column fi's builder, ready for a value (owed nulls appended first).
func (rb *rowBuilder) field(fi int) array.Builder {
	fb := rb.b.Field(fi)
	if n := rb.pending[fi]; n > 0 {
		fb.AppendNulls(n)
		rb.pending[fi] = 0
	}
	rb.valued[fi] = true
	return fb
}

// null owes column fi a null.
func (rb *rowBuilder) null(fi int) { rb.pending[fi]++ }

// record returns the rows appended so far (the caller releases it).
func (rb *rowBuilder) record() arrow.RecordBatch {
	cols := make([]arrow.Array, len(rb.fields))
	for fi, f := range rb.fields {
		if !rb.valued[fi] {
			cols[fi] = arrowutil.Nulls(f.Type, rb.rows)
			continue
		}
		fb := rb.b.Field(fi)
		fb.AppendNulls(rb.pending[fi])
		rb.pending[fi] = 0
		cols[fi] = fb.NewArray()
	}
	rec := array.NewRecordBatch(rb.schema, cols, int64(rb.rows))
	for _, c := range cols {
		c.Release()
	}
	return rec
}
