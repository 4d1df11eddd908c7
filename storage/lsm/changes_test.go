package lsm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// ChangedKeys lists what was sealed since a position, nothing twice across calls from the
// positions it returns, not what is still in a memtable; a merge of generations the reader had
// not seen, or a stale position, makes it incomplete, and its position then covers everything.
func TestChangedKeysFollowSealedGenerations(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("a")
	other := e.open("b") // a second writer: its own shard

	keys, pos, complete, err := s.ChangedKeys(ctx, Position{})
	require.NoError(t, err)
	require.True(t, complete)
	require.Empty(t, keys, "nothing sealed yet")

	appendIDs(t, s, e.mem, 1, "a1", "a2")
	appendIDs(t, other, e.mem, 1, "b1")
	keys, _, complete, err = s.ChangedKeys(ctx, pos)
	require.NoError(t, err)
	require.True(t, complete)
	require.Empty(t, keys, "rows in memtables are not changes yet")

	require.NoError(t, s.Flush(ctx))
	require.NoError(t, other.Flush(ctx))
	keys, pos, complete, err = s.ChangedKeys(ctx, pos)
	require.NoError(t, err)
	require.True(t, complete)
	require.ElementsMatch(t, []string{"a1", "a2", "b1"}, keys, "every shard's sealed rows")
	stale := pos

	appendIDs(t, s, e.mem, 2, "a2", "a3")
	require.NoError(t, s.Flush(ctx))
	keys, pos, complete, err = s.ChangedKeys(ctx, pos)
	require.NoError(t, err)
	require.True(t, complete)
	require.ElementsMatch(t, []string{"a2", "a3"}, keys, "only what was sealed since")

	keys, _, complete, err = s.ChangedKeys(ctx, pos)
	require.NoError(t, err)
	require.True(t, complete)
	require.Empty(t, keys, "nothing twice")

	// A merge of a generation the stale position never saw: incomplete, and the position it
	// returns has seen everything.
	_, err = s.MergeShard(ctx, s.Shard(), MergeOptions{MaxGenerations: -1, MaxBytes: -1})
	require.NoError(t, err)
	keys, fresh, complete, err := s.ChangedKeys(ctx, stale)
	require.NoError(t, err)
	require.False(t, complete)
	require.Empty(t, keys)
	keys, _, complete, err = s.ChangedKeys(ctx, fresh)
	require.NoError(t, err)
	require.True(t, complete)
	require.Empty(t, keys)
	// The position seen before the merge saw everything it merged: still complete.
	keys, _, complete, err = s.ChangedKeys(ctx, pos)
	require.NoError(t, err)
	require.True(t, complete)
	require.Empty(t, keys)

	// A reader about to read the whole store starts from the current position: what is sealed
	// after it is all it is told of.
	appendIDs(t, other, e.mem, 3, "b2")
	require.NoError(t, other.Flush(ctx))
	now, err := s.CurrentPosition(ctx)
	require.NoError(t, err)
	appendIDs(t, other, e.mem, 4, "b3")
	require.NoError(t, other.Flush(ctx))
	keys, _, complete, err = s.ChangedKeys(ctx, now)
	require.NoError(t, err)
	require.True(t, complete)
	require.Equal(t, []string{"b3"}, keys)
}
