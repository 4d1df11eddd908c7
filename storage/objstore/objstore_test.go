package objstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func implementations(t *testing.T) map[string]objstore.Store {
	local, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	prefixed, err := objstore.WithPrefix(objstoretest.NewMemory(), "tables/t1")
	require.NoError(t, err)
	counted, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	return map[string]objstore.Store{
		"memory":   objstoretest.NewMemory(),
		"local":    local,
		"prefixed": prefixed,
		"faulty":   objstoretest.NewFaulty(objstoretest.NewMemory()),
		"counting": objstoretest.NewCounting(objstoretest.NewMemory()),
		"progress": objstore.WithProgress(counted),
	}
}

func TestConformance(t *testing.T) {
	for name, s := range implementations(t) {
		t.Run(name, func(t *testing.T) { objstoretest.Conformance(t, s) })
	}
}

func TestPutIfAbsentHasExactlyOneWinner(t *testing.T) {
	for name, s := range implementations(t) {
		t.Run(name, func(t *testing.T) { objstoretest.ExactlyOneWinner(t, s) })
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
	f := objstoretest.NewFaulty(objstoretest.NewMemory())
	f.AddRule(objstoretest.Rule{Match: objstoretest.MatchKeyPrefix("slow/"), Hang: true})
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
	f := objstoretest.NewFaulty(objstoretest.NewMemory())
	f.AddRule(objstoretest.Rule{Match: objstoretest.MatchKeyPrefix("x", objstoretest.OpPut), Err: objstoretest.ErrInjected, Times: 1})
	require.ErrorIs(t, f.Put(ctx, "x1", nil), objstoretest.ErrInjected)
	require.NoError(t, f.Put(ctx, "x1", nil), "Times bounds the rule")

	f.Reset()
	f.AddRule(objstoretest.Rule{Latency: 20 * time.Millisecond})
	start := time.Now()
	_, _ = f.Get(ctx, "x1")
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	f.Reset()
	f.CrashAfterWrites(2)
	require.NoError(t, f.Put(ctx, "a", nil))
	require.NoError(t, f.PutIfAbsent(ctx, "b", nil))
	require.ErrorIs(t, f.Put(ctx, "c", nil), objstoretest.ErrCrashed)
	require.ErrorIs(t, f.Delete(ctx, "a"), objstoretest.ErrCrashed)
	require.True(t, f.Crashed())
	_, err := f.Get(ctx, "a")
	require.NoError(t, err, "reads still work after the crash")
}

func TestCountingCountsBytes(t *testing.T) {
	ctx := context.Background()
	c := objstoretest.NewCounting(objstoretest.NewMemory())
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
	stores["faulty over local"] = objstoretest.NewFaulty(local)
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			require.True(t, objstore.WritesInPlace(s))
			// The same bytes whether or not large writes may bypass the page cache.
			for key, opts := range map[string]objstore.WriterOptions{"seg/1": {}, "seg/2": {Direct: true}} {
				_, err := objstore.OpenWriter(ctx, s, key, opts)
				require.ErrorIs(t, err, objstore.ErrNotFound, "only existing objects open")
				require.NoError(t, s.PutIfAbsent(ctx, key, nil))
				w, err := objstore.OpenWriter(ctx, s, key, opts)
				require.NoError(t, err)
				require.NoError(t, w.WriteAt(ctx, []byte("world"), 6))
				got, err := s.Get(ctx, key)
				require.NoError(t, err)
				require.Equal(t, "\x00\x00\x00\x00\x00\x00world", string(got), "a gap reads as zeros")
				require.NoError(t, w.WriteAt(ctx, []byte("hello "), 0))
				require.NoError(t, w.Sync(ctx))
				got, _ = s.Get(ctx, key)
				require.Equal(t, "hello world", string(got))
				part, _ := s.GetRange(ctx, key, 6, 5)
				require.Equal(t, "world", string(part))
				require.NoError(t, w.Close())

				require.False(t, objstore.WritesInPlace(plain{s}))
				_, err = objstore.OpenWriter(ctx, plain{s}, key, opts)
				require.ErrorIs(t, err, objstore.ErrUnsupported)
			}
		})
	}
}

func TestFaultyInPlaceWritesCrash(t *testing.T) {
	ctx := context.Background()
	f := objstoretest.NewFaulty(objstoretest.NewMemory())
	require.NoError(t, f.PutIfAbsent(ctx, "seg", nil))
	w, err := f.OpenWriter(ctx, "seg", objstore.WriterOptions{})
	require.NoError(t, err)
	f.CrashAfterWrites(1)
	require.NoError(t, w.WriteAt(ctx, []byte("ab"), 0))
	require.ErrorIs(t, w.Sync(ctx), objstoretest.ErrCrashed)
	require.ErrorIs(t, w.WriteAt(ctx, []byte("cd"), 2), objstoretest.ErrCrashed)
	got, err := f.Get(ctx, "seg")
	require.NoError(t, err)
	require.Equal(t, "ab", string(got), "what was written before the crash stays readable")
}

// The local store's ranged reads, on both of its paths: a range of up to 1 MiB is read as asked
// and cut short by the end of the object; a larger one is clamped to the object's size first.
// A missing object and a directory are errors, never data.
func TestLocalRangedReadsStopAtTheEndOfTheObject(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := objstore.NewLocal(dir)
	require.NoError(t, err)
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, s.Put(ctx, "f/data", data))

	part, err := s.GetRange(ctx, "f/data", 100, 4096)
	require.NoError(t, err)
	require.Equal(t, data[100:4196], part, "a small range inside the object")
	part, err = s.GetRange(ctx, "f/data", int64(len(data))-10, 4096)
	require.NoError(t, err)
	require.Equal(t, data[len(data)-10:], part, "a small range past the end is cut short")
	require.Less(t, cap(part), 4096, "and does not keep the buffer asked for")
	part, err = s.GetRange(ctx, "f/data", 1<<20, 8<<20)
	require.NoError(t, err)
	require.Equal(t, data[1<<20:], part, "a large range is clamped to the object")

	_, err = s.GetRange(ctx, "f/missing", 0, 10)
	require.ErrorIs(t, err, objstore.ErrNotFound)
	_, err = s.GetRange(ctx, "f", 0, 10)
	require.Error(t, err, "a directory is not an object")
}

// The point-get path reuses its page buffers only through stores that read into them: a local
// store has the capability through the wrappers a table's store is built of, and the read cache
// (whose reads hand back the bytes it keeps) never claims it.
func TestALocalStoreReadsIntoBuffersThroughItsWrappersAndTheReadCacheDoesNot(t *testing.T) {
	local, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	prefixed, err := objstore.WithPrefix(local, "tables/t1")
	require.NoError(t, err)
	require.True(t, objstore.ReadsInto(local))
	require.True(t, objstore.ReadsInto(objstore.WithProgress(prefixed)))
	require.False(t, objstore.ReadsInto(objstore.WithReadCache(local, nil, nil)))
	overMemory, err := objstore.WithPrefix(objstoretest.NewMemory(), "tables/t1")
	require.NoError(t, err)
	require.False(t, objstore.ReadsInto(overMemory), "a wrapper answers for the store it wraps")
}
