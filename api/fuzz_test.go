package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http/httptest"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/arrowutil"
)

// Decoders must turn any input into rows or a 400, never panic or leak; the streaming JSON
// decoder must agree with the map-based one whenever it accepts a body.
func FuzzDecodeRolloutRows(f *testing.F) {
	f.Add([]byte(`{"records": [{"id": "a", "rollout_id": "t", "reward": 1.5, "input_tokens": [1,2], "metadata": {"x": 1}}]}`))
	f.Add([]byte(`{"records": [{"id": "a", "rollout_id": "t", "relationships": [{"target_id": "b", "relation": "r", "weight": null}]}]}`))
	f.Add([]byte(`{"records": [{"id": 1}]}`))
	f.Add([]byte(`{"records": [{"id": "a", "rollout_id": "t", "created_at": "2026-01-02T03:04:05Z", "binary_payload": "!!"}]}`))
	f.Add([]byte(`{"records": [{"id": "a\u00e9", "rollout_id": "t", "problem_id": null, "content": "x\ny"}, {"id": "b", "rollout_id": "u"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		cd := codec{schema: kinds.RolloutSchema, json: kinds.RolloutJSONColumns}
		streamed, err := cd.decodeRowsJSON(data, "records", rolloutFill(now), mem)
		if err != nil {
			return
		}
		defer streamed.Release()
		decodersAgree(t, cd, data, "records", rolloutFill(now), mem, streamed)
		_ = cd.encode(streamed, nil)
	})
}

// decodersAgree checks that the map decoder takes body, {"<member>": [...]}, which the streaming
// decoder took as streamed, and decodes it to the same record.
func decodersAgree(t *testing.T, cd codec, body []byte, member string, fill rowFill, mem memory.Allocator, streamed arrow.RecordBatch) {
	t.Helper()
	var req map[string][]map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("the streaming decoder accepted a body encoding/json rejects: %v", err)
	}
	viaMaps, err := cd.decode(req[member], fill, mem)
	if err != nil {
		t.Fatalf("the map decoder rejected a body the streaming decoder accepted: %v", err)
	}
	defer viaMaps.Release()
	if !array.RecordEqual(streamed, viaMaps) {
		t.Fatalf("decoders disagree on %q", body)
	}
}

// Generic rows under a lance-context schema: vectors exactly dim long, binary as base64 or byte
// arrays, timestamps as RFC 3339 or microseconds; both decoders agree and the record is valid.
func FuzzDecodeGenericRows(f *testing.F) {
	f.Add([]byte(`{"rows": [{"id": "a", "v": [1, 2.5, -3e-2], "b": [0, 1, 255], "at": 1700000000000000, "tags": ["x"]}]}`))
	f.Add([]byte(`{"rows": [{"id": "a", "v": [1, 2]}, {"id": "b", "v": [1, null, 3]}, {"id": "c", "b": [256]}]}`))
	f.Add([]byte(`{"rows": [{"id": "a", "b": "AAH/", "at": "2023-11-14T22:13:20Z"}, {"id": "b", "v": null, "b": []}]}`))
	f.Add([]byte(`{"rows": [{"id": "a", "v": [1, 2, 3, 4]}, {"id": "b", "b": [1.5]}, {"id": "c", "at": 1.5}]}`))
	spec, err := kinds.ParseGenericSpec(json.RawMessage(`{"columns": [["id", "string"], ["v", {"type": "vector", "dim": 3}],
		["b", {"type": "binary", "blob": true}], ["at", "timestamp"], ["tags", {"type": "list", "item": "string"}]]}`))
	if err != nil {
		f.Fatal(err)
	}
	cd := codec{schema: spec.Schema, vectors: spec.VectorDims, timestampMicros: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		streamed, err := cd.decodeRowsJSON(data, "rows", nil, mem)
		if err != nil {
			return
		}
		defer streamed.Release()
		require.NoError(t, arrowutil.ValidateRecord(streamed))
		vectors := streamed.Column(1).(*array.List)
		for i := 0; i < vectors.Len(); i++ {
			if start, end := vectors.ValueOffsets(i); vectors.IsValid(i) && end-start != 3 {
				t.Fatalf("row %d holds a vector of %d values", i, end-start)
			}
		}
		decodersAgree(t, cd, data, "rows", nil, mem, streamed)
		_ = cd.encode(streamed, nil)
	})
}

func FuzzDecodeMultipart(f *testing.F) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.SetBoundary("strataboundary")
	fw, _ := mw.CreateFormField("metadata")
	_, _ = fw.Write([]byte(`{"records": [{"id": "a", "rollout_id": "t", "payload_size": 2}]}`))
	fw, _ = mw.CreateFormField("0")
	_, _ = fw.Write([]byte("hi"))
	_ = mw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("--strataboundary\r\nContent-Disposition: form-data; name=\"9\"\r\n\r\nx\r\n--strataboundary--\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		rec, err := decodeMultipartRollouts(multipart.NewReader(bytes.NewReader(data), "strataboundary"), rolloutFill(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), mem, int64(len(data)%7*100))
		if err != nil {
			return
		}
		defer rec.Release()
		sizes := rec.Column(rec.Schema().FieldIndices("payload_size")[0]).(*array.Int64)
		payloads := rec.Column(rec.Schema().FieldIndices("binary_payload")[0]).(*array.LargeBinary)
		for i := 0; i < int(rec.NumRows()); i++ {
			if !sizes.IsNull(i) && (payloads.IsNull(i) || int64(len(payloads.Value(i))) != sizes.Value(i)) {
				t.Fatalf("record %d declares a payload it did not get", i)
			}
		}
	})
}

// Arrow IPC append bodies: any bytes give one valid record or a 400/413, never a panic, and never
// an allocation past the decode limit (a fatal out-of-memory would end the fuzzer).
func FuzzArrowBody(f *testing.F) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "rollout_id", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"t", "t"}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	for _, opts := range [][]ipc.Option{nil, {ipc.WithLZ4()}, {ipc.WithZstd()}} {
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, append([]ipc.Option{ipc.WithSchema(schema)}, opts...)...)
		_ = w.Write(rec)
		_ = w.Close()
		f.Add(buf.Bytes())
	}
	rec.Release()
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	h := &handlers{mem: memory.NewGoAllocator(), bodyLimit: 1 << 20,
		requests: &byteBudget{what: "request bytes", capacity: 64 << 20, rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})}}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := echo.New().NewContext(httptest.NewRequest("POST", "/", nil), httptest.NewRecorder())
		got, err := h.readArrowBody(c, data)
		if err != nil {
			var apiErr *APIError
			if !errors.As(err, &apiErr) || (apiErr.Status != 400 && apiErr.Status != 413) {
				t.Fatalf("want a 400 or 413, got %v", err)
			}
			return
		}
		defer got.Release()
		if n := recordBytes(got); int64(len(data))*compressedDecodeRatio+(64<<10) < n {
			t.Fatalf("a %d-byte body decoded to %d bytes", len(data), n)
		}
		if err := arrowutil.ValidateRecord(got); err != nil {
			t.Fatalf("an accepted body is invalid: %v", err)
		}
	})
}

// Page parameters (limit, offset, cursor) from any query string: a page request or a 400, never a
// panic; an accepted cursor is valid UTF-8.
func FuzzPageParams(f *testing.F) {
	f.Add("limit=10&offset=5&cursor=r42")
	f.Add("cursor=%ff%00")
	f.Add("limit=-1&offset=99999999999999999999")
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest("GET", "/?x=1", nil)
		req.URL.RawQuery = query
		limit, offset, cursor, err := pageParams(echo.New().NewContext(req, httptest.NewRecorder()))
		if err != nil {
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Status != 400 {
				t.Fatalf("want a 400, got %v", err)
			}
			return
		}
		if limit < 1 || limit > 10_000 || offset < 0 || !utf8.ValidString(cursor) {
			t.Fatalf("accepted limit %d offset %d cursor %q", limit, offset, cursor)
		}
	})
}

// recordBytes is the size of rec's buffers (what decoding it holds).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, col := range rec.Columns() {
		walk(col.Data())
	}
	return n
}
