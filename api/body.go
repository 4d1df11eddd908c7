// Request-body helpers: strict JSON decoding into DTOs and content-type checks.
package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/labstack/echo/v4"
)

// decodeBody reads a small JSON request document (store definitions, operations) into v,
// rejecting unknown fields and trailing data. Append bodies do not come here: they stream into
// Arrow builders (rowstream.go).
func decodeBody(c echo.Context, v any) error {
	// A JSON route takes JSON only: a browser page can send a cross-site text/plain or form POST
	// without asking first, never an application/json one.
	if ct := c.Request().Header.Get(echo.HeaderContentType); !isJSON(ct) {
		return unsupportedMediaType(ct, echo.MIMEApplicationJSON)
	}
	data, err := io.ReadAll(io.LimitReader(c.Request().Body, maxDocumentBytes+1))
	if err != nil {
		if limit := bodyLimitError(err); limit != nil {
			return limit
		}
		return invalid("reading the request body: %v", err)
	}
	if len(data) > maxDocumentBytes {
		return errBodyTooLarge
	}
	if !utf8.Valid(data) {
		return invalid("invalid JSON body: it is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
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

// maxDocumentBytes bounds a request document (store definitions, operations).
const maxDocumentBytes = 16 << 20

// bodyLimitError maps a body read error to what the request deserves: 413 past the body limit
// (declared or chunked), 408 when the body stalled, 503 when the request-memory budget refused
// it; nil for anything else (the caller's 400).
func bodyLimitError(err error) error {
	var tooLarge *http.MaxBytesError
	var apiErr *APIError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &tooLarge):
		return errBodyTooLarge
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge:
		return errBodyTooLarge
	}
	return nil
}

// unsupportedMediaType is the 415 of a body in a content type the route does not take.
func unsupportedMediaType(ct string, want ...string) error {
	return &APIError{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMediaType,
		Message: fmt.Sprintf("unsupported content type %q: send %s", ct, strings.Join(want, " or "))}
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
