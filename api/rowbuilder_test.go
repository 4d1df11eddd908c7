package api

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// Deferred nulls give the same record as appending every null as it comes: columns null in every
// row, null at the start, at the end and in between.
func TestRowBuilderMatchesPlainBuilders(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "never", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "late", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "early", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "holes", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	raw := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	rows := [][]string{
		{`"a"`, "", "", `"x"`, `[1]`},
		{`"b"`, "null", "", `"y"`, ""},
		{`"c"`, "", `7`, "", `[2,3]`},
		{`"d"`, "", `8`, "null", "null"},
		{`"e"`, "", "", "", `[]`},
	}
	cd := codec{schema: schema}
	rb := cd.newRowBuilder(mem)
	defer rb.release()
	want := array.NewRecordBuilder(mem, schema)
	defer want.Release()
	for _, r := range rows {
		row := make(rowValues, len(r))
		for fi, v := range r {
			row[fi] = raw(v)
		}
		require.NoError(t, cd.appendRow(rb, row, nil))
		for fi, v := range r {
			if v == "" || v == "null" {
				want.Field(fi).AppendNull()
				continue
			}
			require.NoError(t, appendJSON(want.Field(fi), schema.Field(fi).Type, []byte(v)))
		}
	}
	got, exp := rb.record(), want.NewRecordBatch()
	defer got.Release()
	defer exp.Release()
	require.True(t, array.RecordEqual(exp, got), "want %v\ngot  %v", exp, got)
	require.Equal(t, 5, got.Column(1).NullN())
}
