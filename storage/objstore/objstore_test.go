package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
)

func implementations(t *testing.T) map[string]objstore.Store {
	local, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	prefixed, err := objstore.WithPrefix(objstore.NewMemory(), "tables/t1")
	require.NoError(t, err)
	return map[string]objstore.Store{
		"memory":   objstore.NewMemory(),
		"local":    local,
		"prefixed": prefixed,
		"faulty":   objstore.NewFaulty(objstore.NewMemory()),
		"counting": objstore.NewCounting(objstore.NewMemory()),
	}
}

func TestConformance(t *testing.T) {
	for name, s := range implementations(t) {
		t.Run(name, func(t *testing.T) {
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
			info, err := s.Stat(ctx, "a/b")
			require.NoError(t, err)
			require.EqualValues(t, 11, info.Size)

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
		})
	}
}

func TestPutIfAbsentHasExactlyOneWinner(t *testing.T) {
	for name, s := range implementations(t) {
		t.Run(name, func(t *testing.T) {
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
		})
	}
}

func TestLocalLeavesNoTempFilesAndListSkipsThem(t *testing.T) {
	dir := t.TempDir()
	s, err := objstore.NewLocal(dir)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, s.Put(ctx, "d/x", []byte("1")))
	require.ErrorIs(t, s.PutIfAbsent(ctx, "d/x", []byte("2")), objstore.ErrExists)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d", ".tmp-leftover"), nil, 0o644))
	entries, err := os.ReadDir(filepath.Join(dir, "d"))
	require.NoError(t, err)
	require.Len(t, entries, 2)
	page, err := s.List(ctx, "d/", "", 10)
	require.NoError(t, err)
	require.Len(t, page.Objects, 1)
}

func TestFaultyHangIsBoundedByTheContext(t *testing.T) {
	f := objstore.NewFaulty(objstore.NewMemory())
	f.AddRule(objstore.Rule{Match: objstore.MatchKeyPrefix("slow/"), Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.Get(ctx, "slow/x")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, f.Put(context.Background(), "fast", nil), "other keys are unaffected")
}

func TestFaultyErrorsLatencyAndCrash(t *testing.T) {
	ctx := context.Background()
	f := objstore.NewFaulty(objstore.NewMemory())
	f.AddRule(objstore.Rule{Match: objstore.MatchKeyPrefix("x", objstore.OpPut), Err: objstore.ErrInjected, Times: 1})
	require.ErrorIs(t, f.Put(ctx, "x1", nil), objstore.ErrInjected)
	require.NoError(t, f.Put(ctx, "x1", nil), "Times bounds the rule")

	f.Reset()
	f.AddRule(objstore.Rule{Latency: 20 * time.Millisecond})
	start := time.Now()
	_, _ = f.Get(ctx, "x1")
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	f.Reset()
	f.CrashAfterWrites(2)
	require.NoError(t, f.Put(ctx, "a", nil))
	require.NoError(t, f.PutIfAbsent(ctx, "b", nil))
	require.ErrorIs(t, f.Put(ctx, "c", nil), objstore.ErrCrashed)
	require.ErrorIs(t, f.Delete(ctx, "a"), objstore.ErrCrashed)
	require.True(t, f.Crashed())
	_, err := f.Get(ctx, "a")
	require.NoError(t, err, "reads still work after the crash")
}

func TestCountingCountsBytes(t *testing.T) {
	ctx := context.Background()
	c := objstore.NewCounting(objstore.NewMemory())
	require.NoError(t, c.Put(ctx, "k", make([]byte, 100)))
	_, err := c.GetRange(ctx, "k", 10, 20)
	require.NoError(t, err)
	_, err = c.Get(ctx, "k")
	require.NoError(t, err)
	st := c.Stats()
	require.EqualValues(t, 120, st.ReadBytes)
	require.EqualValues(t, 2, st.Reads)
	require.EqualValues(t, 100, st.WriteBytes)
}

func TestInPlaceWrites(t *testing.T) {
	type plain struct{ objstore.Store } // hides the capability, as a wrapper that lacks it would
	stores := implementations(t)
	local, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	stores["faulty over local"] = objstore.NewFaulty(local)
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			require.True(t, objstore.WritesInPlace(s))
			_, err := objstore.OpenWriter(ctx, s, "seg/1")
			require.ErrorIs(t, err, objstore.ErrNotFound, "only existing objects open")
			require.NoError(t, s.PutIfAbsent(ctx, "seg/1", nil))
			w, err := objstore.OpenWriter(ctx, s, "seg/1")
			require.NoError(t, err)
			require.NoError(t, w.WriteAt(ctx, []byte("world"), 6))
			got, err := s.Get(ctx, "seg/1")
			require.NoError(t, err)
			require.Equal(t, "\x00\x00\x00\x00\x00\x00world", string(got), "a gap reads as zeros")
			require.NoError(t, w.WriteAt(ctx, []byte("hello "), 0))
			require.NoError(t, w.Sync(ctx))
			got, _ = s.Get(ctx, "seg/1")
			require.Equal(t, "hello world", string(got))
			part, _ := s.GetRange(ctx, "seg/1", 6, 5)
			require.Equal(t, "world", string(part))
			require.NoError(t, w.Close())

			require.False(t, objstore.WritesInPlace(plain{s}))
			_, err = objstore.OpenWriter(ctx, plain{s}, "seg/1")
			require.ErrorIs(t, err, objstore.ErrUnsupported)
		})
	}
}

func TestFaultyInPlaceWritesCrash(t *testing.T) {
	ctx := context.Background()
	f := objstore.NewFaulty(objstore.NewMemory())
	require.NoError(t, f.PutIfAbsent(ctx, "seg", nil))
	w, err := f.OpenWriter(ctx, "seg")
	require.NoError(t, err)
	f.CrashAfterWrites(1)
	require.NoError(t, w.WriteAt(ctx, []byte("ab"), 0))
	require.ErrorIs(t, w.Sync(ctx), objstore.ErrCrashed)
	require.ErrorIs(t, w.WriteAt(ctx, []byte("cd"), 2), objstore.ErrCrashed)
	got, err := f.Get(ctx, "seg")
	require.NoError(t, err)
	require.Equal(t, "ab", string(got), "what was written before the crash stays readable")
}
