// Generic stores declared as lance-context's clients declare them: vector columns, blob
// columns, binary values as byte arrays, timestamps as microseconds, a mandatory id.
package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
)

// lanceContextSchema is the schema lance-context's own generic-store tests declare.
const lanceContextSchema = `{"columns": [["id", {"type": "string", "nullable": false}], ["user", "string"], ["score", "float32"],
	["tags", {"type": "list", "item": {"type": "string"}}], ["embedding", {"type": "vector", "dim": 3, "metric": "cosine"}],
	["payload", {"type": "binary", "blob": true}], ["thumb", "binary"], ["at", "timestamp"]]}`

func TestGenericStoresTakeLanceContextSchemasAndValues(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "g", "seal_on_add": true, "schema": `+lanceContextSchema+`}`, nil))

	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/g/rows", map[string]any{"rows": []any{
		map[string]any{"id": "r1", "user": "u1", "score": 0.5, "tags": []string{"a", "b"}, "embedding": []float64{1, 2, 3},
			"payload": []int{0, 1, 255}, "thumb": "AQI=", "at": 1_700_000_000_000_000},
		map[string]any{"id": "r2"}, // every nullable column may be left out
		map[string]any{"id": "r3", "embedding": []float64{0.25, -1e-3, 7}, "payload": "AAH/", "at": "2023-11-14T22:13:20Z"},
	}}, nil))

	check := func(stage string) {
		var row map[string]any
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows/r1", nil, &row), stage)
		require.Equal(t, map[string]any{"id": "r1", "user": "u1", "score": 0.5, "tags": []any{"a", "b"}, "embedding": []any{1.0, 2.0, 3.0},
			"thumb": "AQI=", "at": 1.7e15}, row, "%s: a point read leaves out blob columns only; timestamps are microseconds", stage)
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows/r2", nil, &row), stage)
		require.Equal(t, map[string]any{"id": "r2"}, row, "%s: nulls are left out", stage)
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows/r3?columns=payload,embedding,at", nil, &row), stage)
		require.Equal(t, map[string]any{"id": "r3", "payload": "AAH/", "embedding": []any{0.25, -0.001, 7.0}, "at": 1.7e15}, row,
			"%s: a blob named is read; base64 and byte arrays store the same bytes", stage)
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows/r1?columns=payload", nil, &row), stage)
		require.Equal(t, "AAH/", row["payload"], stage)
		var page api.RowsPage
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows", nil, &page), stage)
		require.Len(t, page.Rows, 3, stage)
		for _, r := range page.Rows {
			require.NotContains(t, string(r), `"payload"`, "%s: listings leave blob columns out", stage)
		}
		require.Contains(t, string(page.Rows[0]), `"thumb":"AQI="`, "%s: a binary column not declared a blob is listed", stage)
		require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/g/rows?filter=at%20%3D%201700000000000000", nil, &page), stage)
		require.Len(t, page.Rows, 2, "%s: a filter takes a timestamp in microseconds, as rows answer it", stage)
	}
	check("memtable and generations")
	require.Equal(t, http.StatusOK, w.do(t, "POST", "/api/v1/generic/g/merge-wal", nil, nil))
	check("merged into the base table")

	for _, bad := range []struct {
		row  map[string]any
		want string
	}{
		{map[string]any{"id": "x", "embedding": []float64{1, 2}}, `expects a vector of 3 values, got 2`},
		{map[string]any{"id": "x", "embedding": []any{1, nil, 3}}, `vector value 1`},
		{map[string]any{"id": "x", "embedding": "abc"}, `expects a vector of 3 numbers`},
		{map[string]any{"id": "x", "usr": "typo"}, `not declared in the store's schema`},
		{map[string]any{"id": "x", "payload": []int{256}}, `byte values (0-255)`},
		{map[string]any{"id": "x", "at": 1.5}, `microseconds since the epoch`},
	} {
		var env api.ErrorBody
		require.Equal(t, http.StatusBadRequest, w.do(t, "POST", "/api/v1/generic/g/rows", map[string]any{"rows": []any{bad.row}}, &env), "%v", bad.row)
		require.Contains(t, env.Error.Message, bad.want)
	}
	var row map[string]any
	require.Equal(t, http.StatusNotFound, w.do(t, "GET", "/api/v1/generic/g/rows/x", nil, &row), "a rejected row is not written")
}

func TestGenericSchemasLanceContextRefusesAreRefused(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	for i, schema := range []string{
		`{"columns": [["name", "string"]]}`, // no id: the store's key is mandatory
		`{"columns": [["id", "string"], ["v", {"type": "vector", "dim": 0}]]}`,
		`{"columns": [["id", "string"], ["v", {"type": "vector", "dim": 3, "metric": "hamming"}]]}`,
		`{"columns": [["id", "string"], ["v", {"type": "list", "item": {"type": "vector", "dim": 3}}]]}`,
	} {
		var env api.ErrorBody
		require.Equal(t, http.StatusBadRequest, w.do(t, "POST", "/api/v1/generic", fmt.Sprintf(`{"name": "g%d", "schema": %s}`, i, schema), &env), schema)
		require.Equal(t, api.CodeInvalidRequest, env.Error.Code)
	}
	var list api.StoreList
	w.do(t, "GET", "/api/v1/generic", nil, &list)
	require.Empty(t, list.Stores, "a refused schema creates nothing")
}

// A store registered by an earlier release with a spec that leaves the key out (it was added
// for it) keeps working.
func TestAGenericStoreWhoseSpecOmitsItsKeyStillServes(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1")
	// Where this worker puts stores: the catalog's URI of one it created.
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic", `{"name": "probe", "schema": {"columns": [["id", "string"]]}}`, nil))
	probe, err := c.cat.GetStore(context.Background(), catalog.KindGeneric, "probe")
	require.NoError(t, err)
	root := probe.URI[:strings.LastIndex(probe.URI, "/")]
	_, _, err = c.cat.CreateStore(context.Background(), catalog.StoreDefinition{Kind: catalog.KindGeneric, Name: "old",
		URI: root + "/old.0123456789abcdef", Schema: json.RawMessage(`{"columns": [["n", "int64"]]}`), Options: json.RawMessage(`{}`)})
	require.NoError(t, err)
	var out json.RawMessage
	require.Equal(t, http.StatusCreated, w.do(t, "POST", "/api/v1/generic/old/rows?flush=true", `{"rows": [{"id": "a", "n": 4}]}`, &out), "%s", out)
	var row map[string]any
	require.Equal(t, http.StatusOK, w.do(t, "GET", "/api/v1/generic/old/rows/a", nil, &row))
	require.Equal(t, map[string]any{"id": "a", "n": 4.0}, row)
}
