package objstoretest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func TestTheReadCachePassesTheConformanceSuite(t *testing.T) {
	objstoretest.Conformance(t, objstore.WithReadCache(objstoretest.NewMemory(), cache.New(1<<20, nil), nil))
	objstoretest.ExactlyOneWinner(t, objstore.WithReadCache(objstoretest.NewMemory(), cache.New(1<<20, nil), nil))
}

// What was read once is served from the cache; a write or delete of the key drops it; objects
// too large for the cache are read every time; listings always reach the store.
func TestTheReadCacheServesRepeatedReadsOnce(t *testing.T) {
	ctx := context.Background()
	counted := objstoretest.NewCounting(objstoretest.NewMemory())
	r := objstore.WithReadCache(counted, cache.New(64<<20, nil), func(k string) bool { return k == "hint" })
	require.NoError(t, r.PutIfAbsent(ctx, "data/f.parquet", []byte("0123456789")))
	reads := func() int64 { return counted.Stats().Reads }
	for range 3 {
		got, err := r.Get(ctx, "data/f.parquet")
		require.NoError(t, err)
		require.Equal(t, "0123456789", string(got))
		part, err := r.GetRange(ctx, "data/f.parquet", 2, 3)
		require.NoError(t, err)
		require.Equal(t, "234", string(part))
	}
	require.EqualValues(t, 2, reads(), "one Get and one GetRange reached the store")

	require.NoError(t, r.Put(ctx, "data/f.parquet", []byte("new")))
	got, err := r.Get(ctx, "data/f.parquet")
	require.NoError(t, err)
	require.Equal(t, "new", string(got), "a Put drops the cached object")
	require.NoError(t, r.Delete(ctx, "data/f.parquet"))
	_, err = r.Get(ctx, "data/f.parquet")
	require.ErrorIs(t, err, objstore.ErrNotFound, "a Delete drops it too")

	big := make([]byte, 9<<20)
	require.NoError(t, r.PutIfAbsent(ctx, "big", big))
	before := reads()
	for range 2 {
		_, err := r.Get(ctx, "big")
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, reads()-before, "objects over the size cap are not cached")
	_, err = objstore.ListAll(ctx, r, "")
	require.NoError(t, err)
	require.Positive(t, counted.Stats().Lists, "listings reach the store")

	// An object another process may rewrite is read from the store every time.
	require.NoError(t, counted.Put(ctx, "hint", []byte("1")))
	_, err = r.Get(ctx, "hint")
	require.NoError(t, err)
	require.NoError(t, counted.Put(ctx, "hint", []byte("2"))) // behind the cache's back
	got, err = r.Get(ctx, "hint")
	require.NoError(t, err)
	require.Equal(t, "2", string(got))
}
