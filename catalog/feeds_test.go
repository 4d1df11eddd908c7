package catalog_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
)

// Consumers: created once, committed, listed, counted in the store's holds while fresh, and
// dropped with the store.
func TestConsumersAreKeptPerStoreAndDroppedWithIt(t *testing.T) {
	c := openCatalog(t)
	ctx := context.Background()
	_, _, err := c.CreateStore(ctx, catalog.StoreDefinition{Kind: catalog.KindRollout, Name: "f", URI: "file:///data/rollout/f.1"})
	require.NoError(t, err)
	_, err = c.CreateConsumer(ctx, catalog.KindRollout, "f", "trainer", "c0")
	require.NoError(t, err)
	_, err = c.CreateConsumer(ctx, catalog.KindRollout, "f", "trainer", "c0")
	require.ErrorIs(t, err, catalog.ErrConflict)
	_, err = c.CreateConsumer(ctx, catalog.KindRollout, "f", "bad/name", "c0")
	require.ErrorIs(t, err, catalog.ErrInvalid)
	got, err := c.CommitConsumer(ctx, catalog.KindRollout, "f", "trainer", "c1")
	require.NoError(t, err)
	require.Equal(t, "c1", got.Cursor)
	_, err = c.CommitConsumer(ctx, catalog.KindRollout, "f", "nobody", "c1")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	list, err := c.ListConsumers(ctx, catalog.KindRollout, "f")
	require.NoError(t, err)
	require.Len(t, list, 1)

	h, err := c.Holds(ctx, catalog.KindRollout, "f", time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{"c1"}, h.Cursors)
	h, err = c.Holds(ctx, catalog.KindRollout, "f", time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, h.Cursors, "a consumer that has not committed within the retention bound holds nothing")

	_, err = c.SoftDeleteStore(ctx, catalog.KindRollout, "f")
	require.NoError(t, err)
	_, err = c.GetConsumer(ctx, catalog.KindRollout, "f", "trainer")
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

// Read tokens: recorded with each store's cut, readable while live, holding their stores until
// released or expired; a token over a store that does not exist is refused whole.
func TestReadTokensHoldTheirStoresUntilReleased(t *testing.T) {
	c := openCatalog(t)
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		_, _, err := c.CreateStore(ctx, catalog.StoreDefinition{Kind: catalog.KindGeneric, Name: n, URI: "file:///data/generic/" + n + ".1"})
		require.NoError(t, err)
	}
	cut := json.RawMessage(`{"table_version": 3}`)
	_, err := c.CreateSnapshot(ctx, catalog.ReadSnapshot{ID: "t1", ExpiresAt: time.Now().Add(time.Hour),
		Stores: []catalog.SnapshotStore{{Kind: catalog.KindGeneric, Name: "a", Cut: cut}, {Kind: catalog.KindGeneric, Name: "b", Cut: cut}}})
	require.NoError(t, err)
	_, err = c.CreateSnapshot(ctx, catalog.ReadSnapshot{ID: "t2", ExpiresAt: time.Now().Add(time.Hour),
		Stores: []catalog.SnapshotStore{{Kind: catalog.KindGeneric, Name: "a", Cut: cut}, {Kind: catalog.KindGeneric, Name: "missing", Cut: cut}}})
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, err = c.GetSnapshot(ctx, "t2")
	require.ErrorIs(t, err, catalog.ErrNotFound, "nothing of a refused token is recorded")

	got, err := c.SnapshotCut(ctx, "t1", catalog.KindGeneric, "b")
	require.NoError(t, err)
	require.JSONEq(t, string(cut), string(got))
	h, err := c.Holds(ctx, catalog.KindGeneric, "a", time.Now())
	require.NoError(t, err)
	require.Len(t, h.Cuts, 1)
	list, err := c.ListSnapshots(ctx, 0)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Len(t, list[0].Stores, 2)

	require.NoError(t, c.ReleaseSnapshot(ctx, "t1"))
	_, err = c.SnapshotCut(ctx, "t1", catalog.KindGeneric, "b")
	require.ErrorIs(t, err, catalog.ErrGone)
	h, err = c.Holds(ctx, catalog.KindGeneric, "a", time.Now())
	require.NoError(t, err)
	require.Empty(t, h.Cuts)
	n, err := c.PurgeSnapshots(ctx, time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// A seal notification reaches every listener, as kind and name.
func TestSealNotificationsReachListeners(t *testing.T) {
	c := openCatalog(t)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 4)
	done := make(chan error, 1)
	go func() {
		done <- c.ListenSealed(ctx, func(kind catalog.Kind, name string) { got <- string(kind) + "/" + name })
	}()
	deadline := time.After(10 * time.Second)
	for {
		// The listener may not be listening yet: notify until one arrives.
		require.NoError(t, c.NotifySealed(context.Background(), catalog.KindRollout, "a/b"))
		select {
		case n := <-got:
			require.Equal(t, "rollout/a/b", n)
			cancel()
			require.Error(t, <-done, "the listener ends with its context")
			return
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("no notification arrived")
		}
	}
}
