// Multipart rollout appends (lance-context compatible): the first part, named "metadata", is the
// JSON body {records: [...]}; every further part carries one record's binary_payload and is named
// by the record's index ("0", "1", ...). Anything ambiguous is rejected with 400 before anything
// is written: metadata not first, a part name that is not an index, an index out of range or
// repeated, a payload whose length differs from the record's payload_size, or a payload_size
// declared with no payload part.
package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
)

// decodeMultipartRollouts reads a multipart append into records with binary_payload filled in.
func decodeMultipartRollouts(r *multipart.Reader) ([]map[string]json.RawMessage, error) {
	first, err := r.NextPart()
	if err != nil {
		return nil, invalid("multipart body has no parts")
	}
	if first.FormName() != "metadata" {
		return nil, invalid("the first multipart part must be \"metadata\", got %q", first.FormName())
	}
	var meta struct {
		Records []map[string]json.RawMessage `json:"records"`
	}
	dec := json.NewDecoder(first)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		return nil, invalid("invalid metadata part: %v", err)
	}
	seen := map[int]bool{}
	for {
		part, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, errBodyTooLarge
			}
			return nil, invalid("malformed multipart body: %v", err)
		}
		idx, err := strconv.Atoi(part.FormName())
		if err != nil || idx < 0 {
			return nil, invalid("multipart part %q: payload parts are named by record index", part.FormName())
		}
		if idx >= len(meta.Records) {
			return nil, invalid("multipart part %d: there are only %d records", idx, len(meta.Records))
		}
		if seen[idx] {
			return nil, invalid("multipart part %d appears twice", idx)
		}
		seen[idx] = true
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, part); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, errBodyTooLarge
			}
			if errors.Is(err, errBodyIdle) {
				return nil, errBodyIdle
			}
			return nil, invalid("reading multipart part %d: %v", idx, err)
		}
		rec := meta.Records[idx]
		if raw, ok := rec["payload_size"]; ok && !isNull(raw) {
			declared, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
			if err != nil || declared != int64(buf.Len()) {
				return nil, invalid("record %d: payload_size %s but the part has %d bytes", idx, string(raw), buf.Len())
			}
		}
		encoded, _ := json.Marshal(base64.StdEncoding.EncodeToString(buf.Bytes()))
		rec["binary_payload"] = encoded
	}
	for i, rec := range meta.Records {
		if raw, ok := rec["payload_size"]; ok && !isNull(raw) && !seen[i] {
			return nil, invalid("record %d declares payload_size %s but no payload part was sent", i, string(raw))
		}
	}
	return meta.Records, nil
}
