package table

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// TestWriteSampleFragment writes one fragment to $STRATA_FRAGMENT_OUT for external readers
// (scripts/check-parquet-interop.sh reads it with DuckDB). Skipped unless the variable is set.
func TestWriteSampleFragment(t *testing.T) {
	out := os.Getenv("STRATA_FRAGMENT_OUT")
	if out == "" {
		t.Skip("set STRATA_FRAGMENT_OUT to write a sample fragment")
	}
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	tbl := newTestTable(t, store, mem)
	upsertRows(t, tbl, mem, []row{{id: "b", value: 2, payload: "x", seq: 2}, {id: "a", value: 1, payload: "y", seq: 1}})
	m, err := tbl.Latest(ctx)
	require.NoError(t, err)
	data, err := store.Get(ctx, m.Fragments[0].Path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Clean(out), data, 0o644))
}
