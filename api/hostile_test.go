package api_test

// The adversarial suite: requests an attacker or a buggy client would send. Each test is named
// after the rule it proves; every one checks the answer, that nothing of a rejected request is
// visible, and that the worker still serves afterwards.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
)

var idRolloutSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
}, nil)

// rawStringArray builds a utf8 array from raw offsets and data, unchecked (as a hostile client's
// writer could).
func rawStringArray(offsets []int32, data []byte) arrow.Array {
	ob := make([]byte, 4*len(offsets))
	for i, o := range offsets {
		binary.LittleEndian.PutUint32(ob[4*i:], uint32(o))
	}
	d := array.NewData(arrow.BinaryTypes.String, len(offsets)-1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(ob), memory.NewBufferBytes(data)}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// ipcOf writes cols (named as schema) as one Arrow IPC stream, unvalidated; opts may add
// compression.
func ipcOf(t *testing.T, schema *arrow.Schema, cols []arrow.Array, opts ...ipc.Option) []byte {
	t.Helper()
	rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, append([]ipc.Option{ipc.WithSchema(schema)}, opts...)...)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func postArrow(w *worker, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.Header.Set(echo.HeaderContentType, api.MIMEArrowStream)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	return rec
}

// requireServesAndHolds checks that the worker still appends and reads, and that the store holds
// exactly the ids want (nothing of a rejected request).
func requireServesAndHolds(t *testing.T, w *worker, store string, want ...string) {
	t.Helper()
	probe := fmt.Sprintf("probe-%d", len(want))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/"+store+"/records",
		map[string]any{"records": []map[string]any{{"id": probe, "rollout_id": "t"}}}, nil))
	var page api.RecordsPage
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/"+store+"/records?limit=1000", nil, &page))
	var got []string
	for _, r := range page.Records {
		var row struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(r, &row))
		if row.ID != probe {
			got = append(got, row.ID)
		}
	}
	require.ElementsMatch(t, want, got)
	require.Equal(t, http.StatusOK, w.do(t, "DELETE", "/api/v1/rollouts/"+store+"/records/"+probe, nil, nil))
}

func TestArrowAppendIsValidatedInFullBeforeItIsDurable(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))
	good := func() arrow.Array {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues([]string{"t", "t"}, nil)
		return b.NewArray()
	}
	cases := map[string][]arrow.Array{
		"offsets going backwards": {rawStringArray([]int32{0, 3, 1}, []byte("abc")), good()},
		"invalid UTF-8 id":        {rawStringArray([]int32{0, 2, 3}, []byte{0xff, 0xfe, 'x'}), good()},
		"empty id":                {rawStringArray([]int32{0, 0, 1}, []byte("x")), good()},
	}
	for name, cols := range cases {
		body := ipcOf(t, idRolloutSchema, cols)
		for _, col := range cols {
			col.Release()
		}
		rec := postArrow(w, "/api/v1/rollouts/a/records", body)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", name, rec.Body.String())
		require.Contains(t, rec.Body.String(), `\"id\"`, "%s: the message names the column", name)
		require.NotContains(t, rec.Body.String(), "runtime error", name)
	}
	// Two id columns: ambiguous, refused.
	dup := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String}}, nil)
	a, b, r := good(), good(), good()
	rec := postArrow(w, "/api/v1/rollouts/a/records", ipcOf(t, dup, []arrow.Array{a, b, r}))
	a.Release()
	b.Release()
	r.Release()
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	requireServesAndHolds(t, w, "a")
}

// recordBodyOffset returns where the body of an IPC stream's first record batch starts: after
// the schema message and the batch's metadata.
func recordBodyOffset(t *testing.T, stream []byte) int {
	t.Helper()
	off := 0
	for i := 0; i < 2; i++ {
		require.Equal(t, uint32(0xFFFFFFFF), binary.LittleEndian.Uint32(stream[off:]))
		off += 8 + int(binary.LittleEndian.Uint32(stream[off+4:]))
	}
	return off
}

func TestDeclaredLengthsCannotMakeTheServerAllocate(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "a"}, nil))

	// 8 bytes: a continuation marker and a 2 GiB metadata length.
	bomb := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}
	rec := postArrow(w, "/api/v1/rollouts/a/records", bomb)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())

	// A real schema message, then a record batch whose metadata declares a 2^40-byte body.
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues([]string{"x1", "x2"}, nil)
	ids := b.NewArray()
	b.Release()
	defer ids.Release()
	stream := ipcOf(t, idRolloutSchema, []arrow.Array{ids, ids})
	declared := patchBodyLength(t, stream, 1<<40)
	rec = postArrow(w, "/api/v1/rollouts/a/records", declared)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())

	// LZ4-compressed buffers whose uncompressed-length prefix says 2^40 bytes.
	lz := ipcOf(t, idRolloutSchema, []arrow.Array{ids, ids}, ipc.WithLZ4())
	at := recordBodyOffset(t, lz)
	binary.LittleEndian.PutUint64(lz[at:], 1<<40)
	rec = postArrow(w, "/api/v1/rollouts/a/records", lz)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())

	// Garbage and truncated streams are 400s.
	for _, body := range [][]byte{[]byte("not arrow at all"), stream[:len(stream)/2], {0xff, 0xff, 0xff, 0xff}} {
		rec = postArrow(w, "/api/v1/rollouts/a/records", body)
		require.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, rec.Code, rec.Body.String())
		require.NotContains(t, rec.Body.String(), "runtime error")
	}
	requireServesAndHolds(t, w, "a")
}

// patchBodyLength rewrites the bodyLength field of the stream's record batch message. The field
// is found by value: the message's real body length, as an int64, in its metadata.
func patchBodyLength(t *testing.T, stream []byte, n int64) []byte {
	t.Helper()
	out := bytes.Clone(stream)
	schemaEnd := 8 + int(binary.LittleEndian.Uint32(out[4:]))
	metaLen := int(binary.LittleEndian.Uint32(out[schemaEnd+4:]))
	meta := out[schemaEnd+8 : schemaEnd+8+metaLen]
	bodyLen := int64(len(out)) - int64(schemaEnd+8+metaLen) - 8 // the end-of-stream marker
	var want [8]byte
	binary.LittleEndian.PutUint64(want[:], uint64(bodyLen))
	i := bytes.Index(meta, want[:])
	require.GreaterOrEqual(t, i, 0, "body length %d not found in the metadata", bodyLen)
	binary.LittleEndian.PutUint64(meta[i:], uint64(n))
	return out
}
