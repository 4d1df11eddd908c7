package table

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// TestWriteSampleFragment writes two fragments for external readers (scripts/check-parquet-interop.sh
// reads them with DuckDB): $STRATA_FRAGMENT_OUT holds rows a and b, and the same path with
// "-sparse" before its extension holds a tombstone of a, whose nullable columns are all null, so
// that fragment does not store them. Skipped unless the variable is set.
func TestWriteSampleFragment(t *testing.T) {
	out := os.Getenv("STRATA_FRAGMENT_OUT")
	if out == "" {
		t.Skip("set STRATA_FRAGMENT_OUT to write a sample fragment")
	}
	ctx, mem := context.Background(), checkedAlloc(t)
	store := objstoretest.NewMemory()
	tbl := newTestTable(t, store, mem)
	write := func(rows []row, path string) {
		t.Helper()
		rec := batch(mem, rows)
		defer rec.Release()
		data, err := store.Get(ctx, upsertAddingFragment(t, tbl, rec, UpsertOptions{}).Path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Clean(path), data, 0o644))
	}
	write([]row{{id: "b", value: 2, payload: "x", seq: 2}, {id: "a", value: 1, payload: "y", seq: 1}}, out)
	write([]row{{id: "a", seq: 3, tombstone: true}}, strings.TrimSuffix(out, filepath.Ext(out))+"-sparse"+filepath.Ext(out))
}
