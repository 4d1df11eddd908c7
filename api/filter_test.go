package api_test

import (
	"net/http"
	"net/url"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
)

func ids(t *testing.T, rows []map[string]any) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r["id"].(string))
	}
	sort.Strings(out)
	return out
}

// lance-context's generic filter= is a SQL predicate; rollout filters= takes one too. JSON
// equalities keep working; a bad predicate is a 400 that says what is wrong.
func TestListFiltersTakeSQLPredicates(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	schema := `{"columns": [["id", "string"], ["step", "int64"], ["role", "string"], ["score", "float64"], ["ok", "bool"]]}`
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "schema": `+schema+`}`, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/g/rows?flush=true", map[string]any{"rows": []any{
		map[string]any{"id": "a", "step": 3, "role": "user", "score": 0.5, "ok": true},
		map[string]any{"id": "b", "step": 7, "role": "user", "score": 1.5, "ok": false},
		map[string]any{"id": "c", "step": 9, "role": "assistant"},
		map[string]any{"id": "d", "step": 12},
	}}, nil))
	list := func(filter string) []string {
		var page struct {
			Rows []map[string]any `json:"rows"`
		}
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows?filter="+url.QueryEscape(filter), nil, &page), filter)
		return ids(t, page.Rows)
	}
	require.Equal(t, []string{"b"}, list("step > 5 AND role = 'user'"))
	require.Equal(t, []string{"a", "b", "c"}, list("role IN ('user', 'assistant')"))
	require.Equal(t, []string{"d"}, list("role IS NULL"))
	require.Equal(t, []string{"c", "d"}, list("NOT (role = 'user') OR role IS NULL"))
	require.Equal(t, []string{"c"}, list("role LIKE 'assist%'"))
	require.Equal(t, []string{"a"}, list("ok AND score < 1"))
	require.Equal(t, []string{"b"}, list(`{"step": 7}`), "JSON equalities still work")
	var page struct {
		Rows []map[string]any `json:"rows"`
	}
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows?limit=1&offset=1&filter="+url.QueryEscape("step > 1"), nil, &page))
	require.Equal(t, []string{"b"}, ids(t, page.Rows), "offset counts matching rows")
	for filter, want := range map[string]string{
		"step > 'x'":       "not a number",
		"nope = 1":         `unknown column "nope"`,
		"step > 5 AND":     "expected a column or a value",
		"_seq > 1":         `unknown column "_seq"`,
		"role = 'unclosed": "unterminated string",
	} {
		var env api.ErrorBody
		require.Equal(t, http.StatusBadRequest, w.do(t, "GET", "/api/v1/generic/g/rows?filter="+url.QueryEscape(filter), nil, &env), filter)
		require.Equal(t, "INVALID_REQUEST", env.Error.Code)
		require.Contains(t, env.Error.Message, want, filter)
	}

	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts", map[string]any{"name": "r"}, nil))
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/rollouts/r/records?flush=true", map[string]any{"records": []any{
		rollout("x1", "t1", "role", "user"), rollout("x2", "t1"), rollout("x3", "t2", "role", "user"),
	}}, nil))
	var recs struct {
		Records []map[string]any `json:"records"`
	}
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/r/records?filters="+url.QueryEscape("rollout_id = 't1' AND role = 'user'"), nil, &recs))
	require.Equal(t, []string{"x1"}, ids(t, recs.Records))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/r/records?filters="+url.QueryEscape(`{"rollout_id": "t1"}`), nil, &recs))
	require.Equal(t, []string{"x1", "x2"}, ids(t, recs.Records))
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/rollouts/r/records?filters="+url.QueryEscape("sequence_order = 0 AND content LIKE '%x3'"), nil, &recs))
	require.Equal(t, []string{"x3"}, ids(t, recs.Records))
	status, code := errCode(t, w, "GET", "/api/v1/rollouts/r/records?filters="+url.QueryEscape("relationships = 1"), nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "INVALID_REQUEST", code)
}
