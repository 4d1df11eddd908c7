package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// jsonString's in-place fast path must agree with encoding/json on every input.
func TestJSONStringMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		`"plain"`, `""`, ` "padded" `, `"esc\"aped"`, `"tab\there"`, `"\u00e9t\u00e9"`, `"été"`,
		"\"bad\xffutf8\"", "\"raw\x01control\"", `"unterminated`, `42`, `null`, `["a"]`, `{"a":1}`, `"a"b"`,
	}
	for _, c := range cases {
		checkJSONString(t, []byte(c))
	}
}

// FuzzJSONString is the same comparison over arbitrary input.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"x"`, `"a\nb"`, "\"\xc3\"", `1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkJSONString(t, raw) })
}

func checkJSONString(t *testing.T, raw []byte) {
	var want string
	wantErr := json.Unmarshal(raw, &want)
	if wantErr == nil && !json.Valid(raw) {
		return
	}
	got, ok := jsonString(raw)
	require.Equal(t, wantErr == nil, ok, "input %q", raw)
	if ok {
		require.Equal(t, want, string(got), "input %q", raw)
	}
}
