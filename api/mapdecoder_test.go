package api

// The map-based row decoder: the reference FuzzDecodeRolloutRows holds the streaming decoder
// (decodeRowsJSON) to. Production decodes every JSON body by streaming.

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// decode builds a record from JSON rows held as maps. The caller releases it.
func (c codec) decode(rows []map[string]json.RawMessage, fill rowFill, mem memory.Allocator) (arrow.RecordBatch, error) {
	rb := c.newRowBuilder(mem)
	defer rb.release()
	c.reserve(rb.b, rows)
	fields := rb.fields
	index := c.columnIndex()
	row := make(rowValues, len(fields))
	for i, m := range rows {
		clear(row)
		for name, raw := range m {
			fi, ok := index[name]
			if !ok {
				return nil, rowError(i, name, "not a column of this store")
			}
			row[fi] = raw
		}
		if err := c.appendRow(rb, row, fill); err != nil {
			return nil, err
		}
	}
	return rb.record(), nil
}

// reserve sizes every column builder for rows up front (string data by the raw values' length,
// an upper bound), so appending never regrows a buffer.
func (c codec) reserve(b *array.RecordBuilder, rows []map[string]json.RawMessage) {
	for fi, f := range c.schema.Fields() {
		fb := b.Field(fi)
		fb.Reserve(len(rows))
		var data int
		switch fb.(type) {
		case *array.StringBuilder, *array.LargeStringBuilder:
			for _, row := range rows {
				data += len(row[f.Name])
			}
		default:
			continue
		}
		switch sb := fb.(type) {
		case *array.StringBuilder:
			sb.ReserveData(data)
		case *array.LargeStringBuilder:
			sb.ReserveData(data)
		}
	}
}
