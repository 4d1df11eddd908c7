package fragment

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"
)

// A column list's schema is built once and shared; lists that differ get schemas of their own
// however their names are spelled; and the cache stays within its bound.
func TestProjectedSchemasAreSharedPerColumnList(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64},
		{Name: "a\x00b", Type: arrow.PrimitiveTypes.Float64},
		{Name: "1:a", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	var p Projections
	ab := p.Of(s, []string{"a", "b"})
	require.Same(t, ab, p.Of(s, []string{"a", "b"}), "the same list: the same schema")
	require.Equal(t, []string{"a", "b"}, fieldNames(ab))
	require.Equal(t, []string{"a\x00b"}, fieldNames(p.Of(s, []string{"a\x00b"})))
	require.Equal(t, []string{"1:a"}, fieldNames(p.Of(s, []string{"1:a"})))
	require.Equal(t, []string{"b", "a"}, fieldNames(p.Of(s, []string{"b", "a"})), "order is part of the list")
	other := arrow.NewSchema(s.Fields(), nil)
	require.NotSame(t, ab, p.Of(other, []string{"a", "b"}), "another table schema: its own projection")

	for i := range 3 * maxProjections {
		names := []string{"a", "b"}
		if i%2 == 0 {
			names = []string{"b"}
		}
		fresh := arrow.NewSchema(s.Fields(), nil) // a new manifest's schema each time
		require.Equal(t, names, fieldNames(p.Of(fresh, names)), fmt.Sprint(i))
		require.LessOrEqual(t, p.n, maxProjections)
		n := 0
		for _, bySchema := range p.m {
			n += len(bySchema)
		}
		require.Equal(t, p.n, n, "the count is what the maps hold")
	}
}

func fieldNames(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}
