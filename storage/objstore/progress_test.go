package objstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
)

// Calls through a WithProgress store count in the Progress their context carries (in-place
// writes too), and in nothing when the context carries none.
func TestProgressCountsCallsAndBytesOfItsContextOnly(t *testing.T) {
	local, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	s := objstore.WithProgress(local)
	require.True(t, objstore.WritesInPlace(s), "it answers for the store it wraps")
	var p objstore.Progress
	ctx := objstore.ContextWithProgress(context.Background(), &p)

	require.NoError(t, s.Put(ctx, "a", []byte("hello")))
	_, err = s.Get(ctx, "a")
	require.NoError(t, err)
	_, err = s.GetRange(ctx, "a", 1, 2)
	require.NoError(t, err)
	_, err = s.List(ctx, "", "", 10)
	require.NoError(t, err)
	calls, bytes := p.Counts()
	require.EqualValues(t, 4, calls)
	require.EqualValues(t, 5+5+2, bytes)

	require.NoError(t, s.PutIfAbsent(ctx, "b", nil))
	w, err := objstore.OpenWriter(ctx, s, "b", objstore.WriterOptions{})
	require.NoError(t, err)
	require.NoError(t, w.WriteAt(ctx, []byte("xyz"), 0))
	require.NoError(t, w.Sync(ctx))
	require.NoError(t, w.Close())
	calls, bytes = p.Counts()
	require.EqualValues(t, 7, calls)
	require.EqualValues(t, 15, bytes)

	_, err = s.Get(context.Background(), "a") // another operation's call
	require.NoError(t, err)
	again, _ := p.Counts()
	require.Equal(t, calls, again)
}
