// Request-body helpers: strict JSON decoding into DTOs and content-type checks.
package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"

	gojson "github.com/goccy/go-json"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/labstack/echo/v4"
)

// decodeBody reads a JSON body into v, rejecting unknown fields and trailing data. It decodes with
// goccy/go-json (encoding/json-compatible, ~2x faster on append bodies; already in the module
// graph through arrow-go).
func decodeBody(c echo.Context, v any) error {
	body := &readErrorRecorder{r: c.Request().Body}
	dec := gojson.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// The decoder does not wrap read errors, so the body's own error decides 413 / 408.
		if limit := bodyLimitError(body.err); limit != nil {
			return limit
		}
		if limit := bodyLimitError(err); limit != nil {
			return limit
		}
		if errors.Is(err, io.EOF) {
			return invalid("the request body is empty")
		}
		return invalid("invalid JSON body: %v", err)
	}
	if dec.More() {
		return invalid("invalid JSON body: trailing data after the object")
	}
	return nil
}

// bodyLimitError maps a body read error to 413 (past the body limit) or 408 (the body stalled);
// nil for anything else.
func bodyLimitError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return errBodyTooLarge
	case errors.Is(err, errBodyIdle):
		return errBodyIdle
	}
	return nil
}

// readErrorRecorder remembers the first read error other than io.EOF.
type readErrorRecorder struct {
	r   io.Reader
	err error
}

func (rr *readErrorRecorder) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if err != nil && err != io.EOF && rr.err == nil {
		rr.err = err
	}
	return n, err
}

// errBodyTooLarge is answered with 413.
var errBodyTooLarge = echo.ErrStatusRequestEntityTooLarge

func isMultipart(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == echo.MIMEMultipartForm
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == echo.MIMEApplicationJSON
}

func contains(s []string, v string) bool { return slices.Contains(s, v) }

func arrowSchema(fields []arrow.Field) *arrow.Schema { return arrow.NewSchema(fields, nil) }

// valueBytes returns the bytes of a binary value at row 0.
func valueBytes(col arrow.Array) []byte {
	switch a := col.(type) {
	case *array.Binary:
		return a.Value(0)
	case *array.LargeBinary:
		return a.Value(0)
	}
	return nil
}
