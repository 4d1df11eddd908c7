package catalog

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// Store definitions' JSON (schema, options) reaches PostgreSQL's jsonb: whatever the bytes, the
// result is ErrInvalid or JSON that jsonb takes (valid UTF-8, no NUL in any key or string).
func FuzzNormalizeJSON(f *testing.F) {
	f.Add([]byte(`{"storage_options": {"k": "v"}}`))
	f.Add([]byte(`{"k": "a\u0000b"}`))
	f.Add([]byte("{\"k\": \"\xff\"}"))
	f.Add([]byte(`{"a\u0000": 1}`))
	f.Add([]byte(`[1, "x", {"y": ["\u0000"]}]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := normalizeJSON("options", raw, "{}")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
			return
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("accepted %q", out)
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		if s, _ := json.Marshal(v); strings.Contains(string(s), `\u0000`) {
			t.Fatalf("accepted a NUL: %q", out)
		}
	})
}

// Every URI ValidateURI accepts reads back as itself, names no empty, "." or ".." segment and
// carries no query (connection options) or user.
func FuzzValidateURI(f *testing.F) {
	for _, s := range []string{"s3://bucket/p/rollout/x.0123456789abcdef", "file:///data/rollout/x", "s3://a b/x", "file:///a%2Fb", "s3://b..c/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateURI(s) != nil {
			return
		}
		u, err := url.Parse(s)
		if err != nil || u.String() != s || u.RawQuery != "" || u.User != nil {
			t.Fatalf("accepted %q, which does not read back as itself", s)
		}
		for _, seg := range strings.Split(strings.Trim(u.Path, "/"), "/") {
			if seg == "" || seg == "." || seg == ".." || len(seg) > 255 {
				t.Fatalf("accepted %q with segment %q", s, seg)
			}
		}
	})
}
