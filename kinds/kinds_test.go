package kinds

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/contexts"
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
	for _, k := range catalog.Kinds {
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
	_, err = Of(catalog.Kind("graph"))
	require.ErrorIs(t, err, catalog.ErrInvalid)
	require.Len(t, Served(), len(catalog.Kinds), "every kind is served")
	_, err = SchemaOf(catalog.Store{Kind: catalog.KindGeneric, Schema: json.RawMessage(`{"columns": 3}`)})
	require.ErrorIs(t, err, catalog.ErrInvalid)
}

// Every rollout default names a column of the schema and builds, for both write paths, a value of
// that column's type.
func TestRolloutDefaultsFitTheSchema(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	now := time.Date(2026, 12, 6, 1, 2, 3, 4000, time.UTC)
	for _, d := range RolloutDefaults {
		idx := RolloutSchema.FieldIndices(d.Column)
		require.Len(t, idx, 1, d.Column)
		f := RolloutSchema.Field(idx[0])
		require.False(t, f.Nullable, "%s: a defaulted column is never null", d.Column)
		require.True(t, RolloutAlwaysPresent[d.Column], d.Column)
		if d.From != "" {
			require.Len(t, RolloutSchema.FieldIndices(d.From), 1, d.From)
			require.Nil(t, d.JSON(now))
			continue
		}
		a := d.Array(f.Type, 3, now, mem)
		require.NotNil(t, a, "%s: the value is of the column's type", d.Column)
		require.Equal(t, 3, a.Len())
		require.True(t, arrow.TypeEqual(f.Type, a.DataType()))
		require.JSONEq(t, string(d.JSON(now)), string(firstJSON(t, a)), d.Column)
		a.Release()
	}
	for name := range RolloutFilterColumns {
		require.Len(t, RolloutSchema.FieldIndices(name), 1, name)
	}
}

// firstJSON is the first value of a as JSON (timestamps as RFC 3339 with the time zone's offset
// written as Z).
func firstJSON(t *testing.T, a arrow.Array) []byte {
	t.Helper()
	if ts, ok := a.(*array.Timestamp); ok {
		b, err := json.Marshal(ts.Value(0).ToTime(ts.DataType().(*arrow.TimestampType).Unit).UTC().Format(time.RFC3339Nano))
		require.NoError(t, err)
		return b
	}
	b, err := json.Marshal(a.GetOneForMarshal(0))
	require.NoError(t, err)
	return b
}

// A context store's declared config is checked (metric, dimension, id index, blob columns) and
// read back from its catalog options.
func TestContextConfig(t *testing.T) {
	for _, ok := range []ContextConfig{{}, {EmbeddingDim: 384, DistanceMetric: "COSINE"}, {DistanceMetric: "dot", IDIndexType: "btree"},
		{BlobColumns: []string{"binary_payload"}}} {
		require.NoError(t, ok.Validate(), ok)
	}
	for _, bad := range []ContextConfig{{EmbeddingDim: -1}, {EmbeddingDim: contexts.MaxEmbeddingDim + 1}, {DistanceMetric: "hamming"},
		{IDIndexType: "hash"}, {BlobColumns: []string{"metadata"}}} {
		require.Error(t, bad.Validate(), bad)
	}
	c := ContextConfig{DistanceMetric: "Cosine"}
	require.NoError(t, c.Validate())
	require.Equal(t, contexts.MetricCosine, c.Metric())
	require.Equal(t, contexts.MetricL2, ContextConfig{}.Metric())
	doc, err := json.Marshal(ContextConfig{EmbeddingDim: 3, DistanceMetric: contexts.MetricDot})
	require.NoError(t, err)
	back, err := ParseContextConfig(doc)
	require.NoError(t, err)
	require.Equal(t, 3, back.EmbeddingDim)
	require.Equal(t, contexts.MetricDot, back.Metric())
	empty, err := ParseContextConfig(nil)
	require.NoError(t, err)
	require.Zero(t, empty.EmbeddingDim)
}
