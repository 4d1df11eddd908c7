// The conformance suite every objstore.Store implementation passes: the contract the table and
// the MemWAL rely on (not-found and exists errors, ranged reads, put-if-absent, paginated
// listings in key order, idempotent deletes, key validation, context cancellation), and
// put-if-absent's single winner under concurrency, which every commit in Strata is built on.
package objstoretest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
)

// Conformance checks s (empty) against the objstore.Store contract.
func Conformance(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	_, err := s.Get(ctx, "a/b")
	require.ErrorIs(t, err, objstore.ErrNotFound)
	_, err = s.Stat(ctx, "a/b")
	require.ErrorIs(t, err, objstore.ErrNotFound)

	require.NoError(t, s.Put(ctx, "a/b", []byte("hello world")))
	got, err := s.Get(ctx, "a/b")
	require.NoError(t, err)
	require.Equal(t, "hello world", string(got))
	part, err := s.GetRange(ctx, "a/b", 6, 5)
	require.NoError(t, err)
	require.Equal(t, "world", string(part))
	part, err = s.GetRange(ctx, "a/b", 6, 100)
	require.NoError(t, err)
	require.Equal(t, "world", string(part), "a range past the end is cut short")
	part, err = s.GetRange(ctx, "a/b", 11, 4)
	require.NoError(t, err)
	require.Empty(t, part, "a range starting at the end is empty")
	part, err = s.GetRange(ctx, "a/b", 40, 4)
	require.NoError(t, err)
	require.Empty(t, part, "a range starting past the end is empty")
	part, err = s.GetRange(ctx, "a/b", 0, 11)
	require.NoError(t, err)
	require.Equal(t, "hello world", string(part), "a range of exactly the object")
	_, err = s.GetRange(ctx, "a/b", -1, 4)
	require.Error(t, err, "a negative offset")
	_, err = s.GetRange(ctx, "a/b", 0, -1)
	require.Error(t, err, "a negative length")
	_, err = s.GetRange(ctx, "missing", 0, 4)
	require.ErrorIs(t, err, objstore.ErrNotFound)
	info, err := s.Stat(ctx, "a/b")
	require.NoError(t, err)
	require.EqualValues(t, 11, info.Size)
	if objstore.ReadsInto(s) {
		readsIntoBuffers(t, s)
	}

	require.NoError(t, s.Put(ctx, "a/b", []byte("replaced")))
	got, _ = s.Get(ctx, "a/b")
	require.Equal(t, "replaced", string(got))

	require.NoError(t, s.PutIfAbsent(ctx, "v/1", []byte("one")))
	require.ErrorIs(t, s.PutIfAbsent(ctx, "v/1", []byte("other")), objstore.ErrExists)
	got, _ = s.Get(ctx, "v/1")
	require.Equal(t, "one", string(got), "PutIfAbsent never overwrites")

	for i := range 7 {
		require.NoError(t, s.Put(ctx, fmt.Sprintf("l/%02d", i), []byte{byte(i)}))
	}
	require.NoError(t, s.Put(ctx, "l/sub/x", nil))
	require.NoError(t, s.Put(ctx, "lz", nil))
	var keys []string
	after := ""
	for {
		page, err := s.List(ctx, "l/", after, 3)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Objects), 3)
		for _, o := range page.Objects {
			keys = append(keys, o.Key)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	require.Equal(t, []string{"l/00", "l/01", "l/02", "l/03", "l/04", "l/05", "l/06", "l/sub/x"}, keys)
	all, err := objstore.ListAll(ctx, s, "l")
	require.NoError(t, err)
	require.Len(t, all, 9)
	// Key-only listings (a store's own ListAllKeys, or the fallback) name the same keys.
	for _, prefix := range []string{"l", "l/", "l/0", "l/sub/", "lz", "nothing/", "l/sub/x", "l/00/x", "lz/"} {
		objs, err := objstore.ListAll(ctx, s, prefix)
		require.NoError(t, err)
		want := []string{}
		for _, o := range objs {
			want = append(want, o.Key)
		}
		got, err := objstore.ListAllKeys(ctx, s, prefix)
		require.NoError(t, err)
		require.Equal(t, want, append([]string{}, got...), "prefix %q", prefix)
	}

	require.NoError(t, s.Delete(ctx, "l/00"))
	require.NoError(t, s.Delete(ctx, "l/00"), "deleting a missing object is fine")
	_, err = s.Get(ctx, "l/00")
	require.ErrorIs(t, err, objstore.ErrNotFound)

	for _, bad := range []string{"", "/abs", "../x", "a/../../x", "a//b", "a/", `a\b`, "./a"} {
		require.ErrorIs(t, s.Put(ctx, bad, nil), objstore.ErrInvalidKey, "%q", bad)
		_, err := s.Get(ctx, bad)
		require.ErrorIs(t, err, objstore.ErrInvalidKey, "%q", bad)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Get(cancelled, "a/b")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, s.Put(cancelled, "c", nil), context.Canceled)
}

// readsIntoBuffers checks ReadRangeInto on "a/b" (holding "hello world") against GetRange's rules.
func readsIntoBuffers(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	buf := []byte("#####")
	n, err := objstore.ReadRangeInto(ctx, s, "a/b", 6, buf)
	require.NoError(t, err)
	require.Equal(t, "world", string(buf[:n]))
	buf = make([]byte, 100)
	n, err = objstore.ReadRangeInto(ctx, s, "a/b", 6, buf)
	require.NoError(t, err)
	require.Equal(t, "world", string(buf[:n]), "a range past the end is cut short")
	n, err = objstore.ReadRangeInto(ctx, s, "a/b", 40, buf)
	require.NoError(t, err)
	require.Zero(t, n, "a range starting past the end is empty")
	_, err = objstore.ReadRangeInto(ctx, s, "a/b", -1, buf)
	require.Error(t, err, "a negative offset")
	_, err = objstore.ReadRangeInto(ctx, s, "missing", 0, buf)
	require.ErrorIs(t, err, objstore.ErrNotFound)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = objstore.ReadRangeInto(cancelled, s, "a/b", 0, buf)
	require.ErrorIs(t, err, context.Canceled)
}

// ExactlyOneWinner checks that of 16 concurrent put-if-absent calls on one key of s, exactly one
// succeeds, the others fail with objstore.ErrExists, and the winner's bytes are stored.
func ExactlyOneWinner(t *testing.T, s objstore.Store) {
	const n = 16
	var wg sync.WaitGroup
	wins := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.PutIfAbsent(context.Background(), "_versions/7.json", []byte(fmt.Sprint(i)))
			if err == nil {
				wins <- i
			} else if !errors.Is(err, objstore.ErrExists) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(wins)
	require.Len(t, wins, 1)
	winner := <-wins
	got, err := s.Get(context.Background(), "_versions/7.json")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(winner), string(got))
}
