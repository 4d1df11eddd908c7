package api

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/stores"
)

// Decoders must turn any input into rows or a 400, never panic or leak.
func FuzzDecodeRolloutRows(f *testing.F) {
	f.Add([]byte(`{"records": [{"id": "a", "rollout_id": "t", "reward": 1.5, "input_tokens": [1,2], "metadata": {"x": 1}}]}`))
	f.Add([]byte(`{"records": [{"id": "a", "rollout_id": "t", "relationships": [{"target_id": "b", "relation": "r", "weight": null}]}]}`))
	f.Add([]byte(`{"records": [{"id": 1}]}`))
	f.Add([]byte(`{"records": [{"id": "a", "rollout_id": "t", "created_at": "2026-01-02T03:04:05Z", "binary_payload": "!!"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req struct {
			Records []map[string]json.RawMessage `json:"records"`
		}
		if json.Unmarshal(data, &req) != nil {
			return
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		cd := codec{schema: stores.RolloutSchema, json: stores.RolloutJSONColumns}
		rec, err := cd.decode(req.Records, mem)
		if err != nil {
			return
		}
		if int(rec.NumRows()) != len(req.Records) {
			t.Fatalf("%d rows decoded from %d records", rec.NumRows(), len(req.Records))
		}
		_ = cd.encode(rec, nil)
		rec.Release()
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
		records, err := decodeMultipartRollouts(multipart.NewReader(bytes.NewReader(data), "strataboundary"))
		if err != nil {
			return
		}
		for i, r := range records {
			if raw, ok := r["payload_size"]; ok && !isNull(raw) {
				if _, has := r["binary_payload"]; !has {
					t.Fatalf("record %d declares a payload it did not get", i)
				}
			}
		}
	})
}
