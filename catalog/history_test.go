package catalog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
)

// The history keeps each store's last 100 runs, newest first, and is dropped with the store.
func TestMaintenanceHistoryIsBoundedAndDroppedWithTheStore(t *testing.T) {
	c := openCatalog(t)
	ctx := context.Background()
	_, _, err := c.CreateStore(ctx, catalog.StoreDefinition{Kind: catalog.KindRollout, Name: "h", URI: "file:///data/rollout/h.1"})
	require.NoError(t, err)
	start := time.Now().Add(-time.Hour)
	for i := range 105 {
		outcome, detail := catalog.RunOK, fmt.Sprintf(`{"rows_merged":%d}`, i)
		if i%10 == 0 {
			outcome, detail = catalog.RunFailed, "boom \x00 "+string([]byte{0xff})
		}
		require.NoError(t, c.RecordRun(ctx, catalog.MaintenanceRun{Kind: catalog.KindRollout, Name: "h", Op: "merge_wal",
			StartedAt: start.Add(time.Duration(i) * time.Second), FinishedAt: start.Add(time.Duration(i)*time.Second + time.Millisecond), Outcome: outcome, Detail: detail}))
	}
	runs, err := c.ListRuns(ctx, catalog.KindRollout, "h", 0)
	require.NoError(t, err)
	require.Len(t, runs, 100)
	require.Equal(t, `{"rows_merged":104}`, runs[0].Detail, "newest first")
	require.Equal(t, `{"rows_merged":5}`, runs[99].Detail, "the oldest five are gone")
	runs, err = c.ListRuns(ctx, catalog.KindRollout, "h", 7)
	require.NoError(t, err)
	require.Len(t, runs, 7)
	require.Equal(t, catalog.RunFailed, runs[4].Outcome) // run 100
	require.Equal(t, "boom  ?", runs[4].Detail, "stored whatever the error held")

	_, err = c.SoftDeleteStore(ctx, catalog.KindRollout, "h")
	require.NoError(t, err)
	runs, err = c.ListRuns(ctx, catalog.KindRollout, "h", 0)
	require.NoError(t, err)
	require.Empty(t, runs)
}
