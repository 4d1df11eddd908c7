package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/client"
)

// The Go client's feed: a consumer tails batches (committed after each), a restart resumes after
// the last commit, and a read token reads the same rows after the store moved on.
func TestFeedConsumersAndSnapshots(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(server(t, nil))
	require.NoError(t, err)
	schema := json.RawMessage(`{"columns": [["id", "string"], ["step", "int64"]]}`)
	_, _, err = c.CreateStore(ctx, client.KindGeneric, "g", client.CreateOptions{Schema: schema})
	require.NoError(t, err)
	_, err = c.CreateConsumer(ctx, client.KindGeneric, "g", "trainer", "")
	require.NoError(t, err)
	_, err = c.Append(ctx, client.KindGeneric, "g", rows(t, map[string]any{"id": "a", "step": 1}, map[string]any{"id": "b", "step": 2}), true)
	require.NoError(t, err)

	var got []string
	errStop := errors.New("stop")
	err = c.Tail(ctx, client.KindGeneric, "g", client.FeedOptions{Consumer: "trainer", Wait: time.Second}, func(b client.FeedBatch) error {
		for _, r := range b.Rows {
			got = append(got, r["id"].(string))
			require.Equal(t, "upsert", r["_op"])
		}
		if len(got) == 2 {
			return errStop
		}
		return nil
	})
	require.ErrorIs(t, err, errStop)
	require.ElementsMatch(t, []string{"a", "b"}, got)
	// The batch fn refused was not committed: it comes again.
	b, err := c.Changes(ctx, client.KindGeneric, "g", client.FeedOptions{Consumer: "trainer"})
	require.NoError(t, err)
	require.Len(t, b.Rows, 2)
	require.NoError(t, c.Commit(ctx, client.KindGeneric, "g", "trainer", b.Cursor))
	b, err = c.Changes(ctx, client.KindGeneric, "g", client.FeedOptions{Consumer: "trainer", Wait: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, b.Rows)
	cons, err := c.Consumers(ctx, client.KindGeneric, "g")
	require.NoError(t, err)
	require.Len(t, cons, 1)

	snap, err := c.CreateSnapshot(ctx, []string{"generic/g"}, time.Hour)
	require.NoError(t, err)
	_, err = c.Append(ctx, client.KindGeneric, "g", rows(t, map[string]any{"id": "c", "step": 3}), true)
	require.NoError(t, err)
	n := 0
	require.NoError(t, c.Scan(ctx, client.KindGeneric, "g", client.ScanOptions{Snapshot: snap.ID}, func(json.RawMessage) error { n++; return nil }))
	require.Equal(t, 2, n, "the token's cut, without the row appended after it")
	list, err := c.Snapshots(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NoError(t, c.DeleteSnapshot(ctx, snap.ID))
	err = c.Scan(ctx, client.KindGeneric, "g", client.ScanOptions{Snapshot: snap.ID}, func(json.RawMessage) error { return nil })
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusGone, apiErr.Status)
}
