package kinds

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
)

func TestGenericSchemaSpec(t *testing.T) {
	s, err := ParseSchemaSpec(json.RawMessage(`{"columns": [["score", "float64"], ["tags", {"type": "list", "item": "string"}], ["n", {"type": "int64", "nullable": false}]]}`))
	require.NoError(t, err)
	require.Equal(t, "id", s.Field(0).Name)
	require.False(t, s.Field(3).Nullable)
	for _, bad := range []string{`{}`, `{"columns": []}`, `{"columns": [["_x", "string"]]}`, `{"columns": [["a", "string"], ["a", "int64"]]}`,
		`{"columns": [["a", "decimal"]]}`, `{"columns": [["a", {"type": "list", "item": {"type": "list", "item": "string"}}]]}`,
		`{"columns": [["id", "int64"]]}`, `{"columns": [["v", {"type": "vector", "dim": 3}]]}`, `{"columns": [["a"]]}`, `{"cols": []}`} {
		_, err := ParseSchemaSpec(json.RawMessage(bad))
		require.ErrorIs(t, err, catalog.ErrInvalid, bad)
	}
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
