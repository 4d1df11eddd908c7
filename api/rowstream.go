// Streaming decode of JSON append bodies, {"<member>": [{row}, ...]}: one pass over the body with
// a JSON tokenizer (go-json-experiment/json/jsontext, the encoding/json/v2 tokenizer), each row's
// values gathered by column position and appended straight into Arrow builders — no per-row maps,
// no intermediate documents. The body must hold exactly that one member; rows reject undeclared
// columns and duplicate names, naming the row, before anything is written.
package api

import (
	"bytes"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"
)

// readBody reads the whole request body: 413 past the body limit, 408 when it stalls, 400 when
// it is empty.
func readBody(c echo.Context) ([]byte, error) {
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		if limit := bodyLimitError(err); limit != nil {
			return nil, limit
		}
		return nil, invalid("reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, invalid("the request body is empty")
	}
	return data, nil
}

// checkJSONSyntax answers 400 for a body that is not one valid JSON document.
func checkJSONSyntax(body []byte) error {
	if !jsontext.Value(body).IsValid() {
		// Decode it to get the position and reason.
		dec := jsontext.NewDecoder(bytes.NewReader(body))
		if _, err := dec.ReadValue(); err != nil {
			return invalid("invalid JSON body: %v", err)
		}
		return invalid("invalid JSON body: trailing data after the object")
	}
	return nil
}

// decodeRowsJSON decodes body, {"<member>": [...]}, into a record of c's schema. fill completes
// each row before it is appended (nil: none). The caller releases the record.
func (c codec) decodeRowsJSON(body []byte, member string, fill rowFill, mem memory.Allocator) (arrow.RecordBatch, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	syntax := func(err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return invalid("invalid JSON body: unexpected end of input")
		}
		return invalid("invalid JSON body: %v", err)
	}
	// expect reads the next token and checks its kind.
	expect := func(kind jsontext.Kind, what string) error {
		tok, err := dec.ReadToken()
		if err != nil {
			return syntax(err)
		}
		if tok.Kind() != kind {
			return invalid("invalid JSON body: want %s, got %s", what, tok.Kind())
		}
		return nil
	}
	if err := expect('{', "an object"); err != nil {
		return nil, err
	}
	fields := c.schema.Fields()
	index := c.columnIndex()
	b := array.NewRecordBuilder(mem, c.schema)
	defer b.Release()
	row := make(rowValues, len(fields))
	spans := make([][2]int, len(fields)) // where each column's value sits in arena; -1 = absent
	var arena []byte
	rows := 0
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, syntax(err)
		}
		if tok.Kind() != '"' || tok.String() != member {
			return nil, invalid("invalid JSON body: unknown field %q (want only %q)", tok.String(), member)
		}
		switch dec.PeekKind() {
		case 'n':
			_, _ = dec.ReadToken()
			continue
		case '[':
		default:
			return nil, invalid("invalid JSON body: %q must be an array of objects", member)
		}
		_, _ = dec.ReadToken()
		for dec.PeekKind() != ']' {
			if dec.PeekKind() != '{' {
				if _, err := dec.ReadValue(); err != nil {
					return nil, syntax(err)
				}
				return nil, invalid("row %d: want a JSON object", rows)
			}
			_, _ = dec.ReadToken()
			for j := range spans {
				spans[j] = [2]int{-1, -1}
			}
			arena = arena[:0]
			for dec.PeekKind() != '}' {
				name, err := dec.ReadToken()
				if err != nil {
					return nil, syntax(err)
				}
				fi, ok := index[name.String()]
				if !ok {
					return nil, rowError(rows, name.String(), "not a column of this store")
				}
				v, err := dec.ReadValue()
				if err != nil {
					return nil, syntax(err)
				}
				spans[fi] = [2]int{len(arena), len(arena) + len(v)}
				arena = append(arena, v...)
			}
			if err := expect('}', "the end of a row"); err != nil {
				return nil, err
			}
			for j, sp := range spans {
				row[j] = nil
				if sp[0] >= 0 {
					row[j] = arena[sp[0]:sp[1]:sp[1]]
				}
			}
			if err := c.appendRow(b, fields, rows, row, fill); err != nil {
				return nil, err
			}
			rows++
		}
		if err := expect(']', "the end of the array"); err != nil {
			return nil, err
		}
	}
	if err := expect('}', "the end of the object"); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, invalid("invalid JSON body: trailing data after the object")
	}
	if rows == 0 {
		return nil, invalid("no rows to add")
	}
	return b.NewRecordBatch(), nil
}

// stringColumn returns the values of a string column of rec.
func stringColumn(rec arrow.RecordBatch, name string) []string {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil
	}
	col, ok := rec.Column(idx[0]).(*array.String)
	if !ok {
		return nil
	}
	out := make([]string, col.Len())
	for i := range out {
		out[i] = col.Value(i)
	}
	return out
}
