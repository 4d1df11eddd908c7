package activities

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/table"
)

// A merge writes uncompressed only the fragments the worker's compaction will rewrite: those under
// its target rows (--compact-target-rows), unless the merge options choose for themselves.
func TestAMergeWritesUncompressedOnlyWhatTheWorkersCompactionRewrites(t *testing.T) {
	require.EqualValues(t, 5000, mergeOptionsFor(lsm.MergeOptions{}, table.CompactionConfig{TargetRowsPerFragment: 5000}).UncompressedBelowRows)
	require.Zero(t, mergeOptionsFor(lsm.MergeOptions{}, table.CompactionConfig{}).UncompressedBelowRows, "lsm's default: the compaction's default target")
	require.EqualValues(t, -1, mergeOptionsFor(lsm.MergeOptions{UncompressedBelowRows: -1}, table.CompactionConfig{TargetRowsPerFragment: 5000}).UncompressedBelowRows)
	require.EqualValues(t, 8, mergeOptionsFor(lsm.MergeOptions{MaxGenerations: 8}, table.CompactionConfig{}).MaxGenerations)
}
