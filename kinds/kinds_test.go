package kinds

import (
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
)

func TestGenericSchemaSpec(t *testing.T) {
	spec, err := ParseGenericSpec(json.RawMessage(`{"columns": [["score", "float64"], ["id", {"type": "string", "nullable": false}],
		["tags", {"type": "list", "item": "string"}], ["n", {"type": "int64", "nullable": false}],
		["embedding", {"type": "vector", "dim": 3, "metric": "cosine"}]]}`))
	require.NoError(t, err)
	s := spec.Schema
	require.Equal(t, "id", s.Field(0).Name, "id comes first wherever it is declared")
	require.False(t, s.Field(0).Nullable)
	require.False(t, s.Field(3).Nullable)
	require.True(t, arrow.TypeEqual(arrow.ListOf(arrow.PrimitiveTypes.Float32), s.Field(4).Type), "a vector is stored as a list of float32: %s", s.Field(4).Type)
	require.Equal(t, map[string]int{"embedding": 3}, spec.VectorDims)
	id := `["id", "string"], `
	for _, bad := range []string{`{}`, `{"columns": []}`, `{"columns": [` + id + `["_x", "string"]]}`, `{"columns": [` + id + `["a", "string"], ["a", "int64"]]}`,
		`{"columns": [` + id + `["a", "decimal"]]}`, `{"columns": [` + id + `["a", {"type": "list", "item": {"type": "list", "item": "string"}}]]}`,
		`{"columns": [["id", "int64"]]}`, `{"columns": [` + id + `["a"]]}`, `{"cols": []}`,
		`{"columns": [` + id + `["v", {"type": "vector"}]]}`, `{"columns": [` + id + `["v", {"type": "vector", "dim": 0}]]}`,
		`{"columns": [` + id + `["v", {"type": "vector", "dim": -1}]]}`, `{"columns": [` + id + `["v", {"type": "vector", "dim": 65537}]]}`,
		`{"columns": [` + id + `["v", {"type": "vector", "dim": 2, "metric": "manhattan"}]]}`,
		`{"columns": [` + id + `["v", {"type": "list", "item": {"type": "vector", "dim": 2}}]]}`} {
		_, err := ParseSchemaSpec(json.RawMessage(bad))
		require.ErrorIs(t, err, catalog.ErrInvalid, bad)
	}

	// A new store declares its key; a spec stored by an earlier release, which did not, still
	// parses (with the key added first).
	noID := json.RawMessage(`{"columns": [["name", "string"]]}`)
	require.ErrorIs(t, CheckNewSchemaSpec(noID), catalog.ErrInvalid)
	old, err := ParseSchemaSpec(noID)
	require.NoError(t, err)
	require.Equal(t, []string{"id", "name"}, []string{old.Field(0).Name, old.Field(1).Name})
	require.NoError(t, CheckNewSchemaSpec(json.RawMessage(`{"columns": [["name", "string"], ["id", "string"]]}`)))
}

func TestEveryServedKindHasASchemaAndOthersAreRefused(t *testing.T) {
	for _, k := range []catalog.Kind{catalog.KindRollout, catalog.KindGeneric, catalog.KindDatagen} {
		d, err := Of(k)
		require.NoError(t, err)
		require.Equal(t, k, d.Name)
		if k != catalog.KindGeneric {
			s, err := d.Schema(nil)
			require.NoError(t, err)
			require.Equal(t, d.KeyColumn, s.Field(0).Name, "the key column comes first")
		}
	}
	s, err := SchemaOf(catalog.Store{Kind: catalog.KindRollout})
	require.NoError(t, err)
	require.Equal(t, KeyColumn, s.Field(0).Name)
	_, err = Of(catalog.KindContext)
	require.ErrorIs(t, err, catalog.ErrInvalid)
	_, err = SchemaOf(catalog.Store{Kind: catalog.KindGeneric, Schema: json.RawMessage(`{"columns": 3}`)})
	require.ErrorIs(t, err, catalog.ErrInvalid)
}
