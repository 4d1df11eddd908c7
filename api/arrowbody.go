// Arrow IPC bodies: appends may send an Arrow IPC stream (application/vnd.apache.arrow.stream)
// of user columns instead of JSON, and listings may ask for one (Accept header) instead of JSON.
// Columns are checked against the store's schema by name and type; nothing is converted.
package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/arrowutil"
)

// MIMEArrowStream is the Arrow IPC streaming format's media type.
const MIMEArrowStream = "application/vnd.apache.arrow.stream"

func isArrowStream(contentType string) bool {
	return strings.HasPrefix(strings.TrimSpace(contentType), MIMEArrowStream)
}

// compressedDecodeRatio bounds what a compressed (LZ4/ZSTD) IPC body may decode to: this many
// times its own length (and never past the body limit). Decoded bytes are reserved in the
// request-memory budget before they are allocated.
const compressedDecodeRatio = 2

// decodeLimit is the most an IPC body of n bytes may decode to.
func (h *handlers) decodeLimit(n int) int64 {
	return min(h.bodyLimit, compressedDecodeRatio*int64(n)+(64<<10))
}

// readArrowBody decodes an IPC stream body (read whole, bounded by the body limit) into one
// record. Columns are slices of body, not copies; lengths the stream declares are checked against
// the bytes present (400), and decompression may not produce more than decodeLimit bytes (413),
// each allocation reserved in the request-memory budget first (503 when it is full). The caller
// releases the record.
func (h *handlers) readArrowBody(c echo.Context, body []byte) (arrow.RecordBatch, error) {
	mem := &budgetedAllocator{Allocator: h.mem, budget: h.requests}
	c.Response().After(mem.release) // decoded bytes stay (joined into the record) until the answer
	parts, schema, err := arrowutil.ReadBytesBatches(body, mem, h.decodeLimit(len(body)))
	if err != nil {
		var refused *APIError
		if errors.As(err, &refused) {
			return nil, refused
		}
		if errors.Is(err, arrowutil.ErrTooLarge) {
			return nil, &APIError{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge,
				Message: "the Arrow IPC stream decodes to more data than the request may (compressed buffers count as decoded)"}
		}
		if errors.Is(err, arrowutil.ErrTruncated) {
			return nil, invalid("invalid Arrow IPC stream: a message declares more bytes than the body holds")
		}
		// The library's message may quote internals (panics it recovered): say what was wrong.
		return nil, invalid("invalid Arrow IPC stream: the body is not a well-formed Arrow IPC stream (schema message, record batches, optional end-of-stream marker)")
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for _, f := range schema.Fields() {
		if len(schema.FieldIndices(f.Name)) > 1 {
			return nil, invalid("column %q appears more than once in the Arrow stream", f.Name)
		}
	}
	for _, p := range parts { // before anything (joining included) trusts their buffers
		if err := arrowutil.ValidateRecord(p); err != nil {
			return nil, invalid("%v", err)
		}
	}
	rec, err := arrowutil.Concat(schema, parts, mem)
	if err != nil {
		return nil, invalid("invalid Arrow IPC stream: its record batches cannot be joined")
	}
	if rec.NumRows() == 0 {
		rec.Release()
		return nil, invalid("no rows to add")
	}
	return rec, nil
}

// budgetedAllocator reserves what decoding allocates in the request-memory budget before it is
// allocated (a refusal panics with the budget's 503, which the IPC reader returns as its error).
// The reservations are returned by release, when the request has been answered.
type budgetedAllocator struct {
	memory.Allocator
	budget   *byteBudget
	mu       sync.Mutex
	reserved int64
}

func (a *budgetedAllocator) take(n int64) {
	if a.budget == nil || n <= 0 {
		return
	}
	got, ok := a.budget.tryReserve(n)
	if !ok {
		panic(a.budget.refusal())
	}
	a.mu.Lock()
	a.reserved += got
	a.mu.Unlock()
}

func (a *budgetedAllocator) Allocate(size int) []byte {
	a.take(int64(size))
	return a.Allocator.Allocate(size)
}

func (a *budgetedAllocator) Reallocate(size int, b []byte) []byte {
	a.take(int64(size - len(b)))
	return a.Allocator.Reallocate(size, b)
}

func (a *budgetedAllocator) release() {
	if a.budget == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.budget.free(a.reserved)
	a.reserved = 0
}

// checkJSONColumns refuses a batch whose JSON columns (kinds' JSONColumns) hold a value that is
// not exactly one JSON document: an Arrow append must store what a JSON append would.
func checkJSONColumns(rec arrow.RecordBatch, jsonColumns map[string]bool) error {
	schema := rec.Schema()
	for ci := range schema.NumFields() {
		f := schema.Field(ci)
		if !jsonColumns[f.Name] {
			continue
		}
		text, ok := rec.Column(ci).(interface{ Value(int) string })
		if !ok {
			continue // the schema check names the wrong type
		}
		arr := rec.Column(ci)
		for i := range arr.Len() {
			if arr.IsNull(i) {
				continue
			}
			if v := text.Value(i); !json.Valid(unsafe.Slice(unsafe.StringData(v), len(v))) {
				return invalid("column %q row %d: not a JSON document (%s holds JSON, as in a JSON append)", f.Name, i, f.Name)
			}
		}
	}
	return nil
}

// withRolloutDefaults adds the rollout kind's defaults (kinds.RolloutDefaults) for the columns an
// Arrow batch leaves out, after checking it has kinds.RolloutRequired.
func withRolloutDefaults(rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	s := rec.Schema()
	for _, name := range kinds.RolloutRequired {
		if len(s.FieldIndices(name)) == 0 {
			return nil, invalid("an Arrow rollout batch needs the %s columns", strings.Join(kinds.RolloutRequired, " and "))
		}
	}
	fields := append([]arrow.Field{}, s.Fields()...)
	cols := append([]arrow.Array{}, rec.Columns()...)
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	n := int(rec.NumRows())
	now := time.Now()
	for _, d := range kinds.RolloutDefaults {
		if len(s.FieldIndices(d.Column)) > 0 {
			continue
		}
		if d.From != "" {
			from := s.FieldIndices(d.From)[0]
			fields = append(fields, arrow.Field{Name: d.Column, Type: s.Field(from).Type, Nullable: s.Field(from).Nullable})
			cols = append(cols, rec.Column(from))
			continue
		}
		f := kinds.RolloutSchema.Field(kinds.RolloutSchema.FieldIndices(d.Column)[0])
		a := d.Array(f.Type, n, now, mem)
		made = append(made, a)
		fields = append(fields, arrow.Field{Name: d.Column, Type: f.Type})
		cols = append(cols, a)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n)), nil
}

// wantsArrow reports whether the client asked for an Arrow IPC response.
func wantsArrow(c echo.Context) bool {
	return strings.Contains(c.Request().Header.Get(echo.HeaderAccept), MIMEArrowStream)
}

// writeArrow answers with rec as an Arrow IPC stream, written to the connection as it is encoded
// (the page is never copied into one buffer first).
func writeArrow(c echo.Context, rec arrow.RecordBatch, next string, mem memory.Allocator) error {
	res := c.Response()
	if next != "" {
		res.Header().Set("X-Next-Cursor", next)
	}
	res.Header().Set(echo.HeaderContentType, MIMEArrowStream)
	res.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(res, 64<<10)
	w := ipc.NewWriter(bw, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return bw.Flush()
}
