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

// preallocBodyBytes is the most of a body's declared Content-Length allocated before its bytes
// arrive: past it the buffer grows as they do (see readGrowing), so a client cannot make the
// server allocate memory it never sends.
const preallocBodyBytes = 8 << 20

// bodySizeHint is how many bytes of the body may be allocated up front: its declared length, at
// most preallocBodyBytes (0 when unknown).
func bodySizeHint(c echo.Context) int {
	return int(min(max(c.Request().ContentLength, 0), preallocBodyBytes))
}

// readBody reads the whole request body: 413 past the body limit, 408 when it stalls, 400 when
// it is empty.
func readBody(c echo.Context) ([]byte, error) {
	data, err := readGrowing(c.Request().Body, c.Request().ContentLength)
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

// readGrowing reads r to its end into an arrivalBuffer: allocated as the bytes arrive, at most
// 1.5 times the declared length (unknown: -1) at the peak. A body shorter than it declared is
// io.ErrUnexpectedEOF.
func readGrowing(r io.Reader, declared int64) ([]byte, error) {
	a := newArrivalBuffer(declared)
	if err := a.readFrom(r); err != nil {
		return nil, err
	}
	if declared > 0 && a.len() < declared {
		return nil, io.ErrUnexpectedEOF
	}
	return a.bytes(), nil
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
	return c.decodeRowsJSONFrom(bytes.NewBuffer(body), len(body), member, fill, mem)
}

// decodeRowsJSONFrom is decodeRowsJSON reading the document from src as it arrives (a request
// body streams straight into the Arrow builders: the whole body is never held), sizeHint its
// expected length (sizes the builders; 0 when unknown). Read errors of src answer as body errors
// (413, 408, 503).
func (c codec) decodeRowsJSONFrom(src io.Reader, sizeHint int, member string, fill rowFill, mem memory.Allocator) (arrow.RecordBatch, error) {
	dec := jsontext.NewDecoder(src)
	syntax := func(err error) error {
		if limit := bodyLimitError(err); limit != nil {
			return limit
		}
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
	index := c.columnIndex()
	rb := c.newRowBuilder(mem)
	defer rb.release()
	row := make(rowValues, len(rb.fields))
	// A row's values are copied into scratch as they are read (the decoder's buffer moves on),
	// then sliced once the row is complete: scratch may grow meanwhile.
	var scratch []byte
	spans := make([][2]int, len(rb.fields))
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
				return nil, invalid("row %d: want a JSON object", rb.rows)
			}
			_, _ = dec.ReadToken()
			rowStart := dec.InputOffset()
			clear(row)
			clear(spans)
			scratch = scratch[:0]
			for dec.PeekKind() != '}' {
				name, err := dec.ReadToken()
				if err != nil {
					return nil, syntax(err)
				}
				fi, ok := index[name.String()]
				if !ok {
					return nil, rowError(rb.rows, name.String(), "not declared in the store's schema")
				}
				v, err := dec.ReadValue()
				if err != nil {
					return nil, syntax(err)
				}
				spans[fi] = [2]int{len(scratch), len(scratch) + len(v)}
				scratch = append(scratch, v...)
				row[fi] = v // non-nil marks the column present; replaced below
			}
			if err := expect('}', "the end of a row"); err != nil {
				return nil, err
			}
			for fi := range row {
				if row[fi] != nil {
					row[fi] = scratch[spans[fi][0]:spans[fi][1]:spans[fi][1]]
				}
			}
			if rb.rows == 0 {
				reserveFromFirstRow(rb.b, row, sizeHint, int(dec.InputOffset()-rowStart))
			}
			if err := c.appendRow(rb, row, fill); err != nil {
				return nil, err
			}
		}
		if err := expect(']', "the end of the array"); err != nil {
			return nil, err
		}
	}
	if err := expect('}', "the end of the object"); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		if limit := bodyLimitError(err); limit != nil {
			return nil, limit
		}
		return nil, invalid("invalid JSON body: trailing data after the object")
	}
	if rb.rows == 0 {
		return nil, invalid("no rows to add")
	}
	return rb.record(), nil
}

// reserveFromFirstRow sizes the builders for the whole body, estimating the row count from the
// first row's length and each string column's data from its first value (with headroom), so
// appending rarely regrows a buffer. Columns absent from the first row are left alone: they are
// most likely null throughout (see rowBuilder). An estimate only: builders still grow when it is
// short.
func reserveFromFirstRow(b *array.RecordBuilder, first rowValues, bodyLen, rowLen int) {
	if bodyLen <= 0 {
		return
	}
	est := min(bodyLen/max(rowLen, 1)+1, 1<<20)
	for fi, fb := range b.Fields() {
		if first[fi] == nil {
			continue
		}
		fb.Reserve(est)
		data := (len(first[fi]) + len(first[fi])/4) * est
		switch sb := fb.(type) {
		case *array.StringBuilder:
			sb.ReserveData(min(data, bodyLen))
		case *array.LargeStringBuilder:
			sb.ReserveData(min(data, bodyLen))
		}
	}
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
