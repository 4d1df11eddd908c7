package deleter

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// flakyStore fails the first failures deletes of each call sequence, and blocks deletes while
// hang is set (until the call's context ends).
type flakyStore struct {
	*objstoretest.Memory
	failures atomic.Int32
	hang     atomic.Bool
	calls    atomic.Int32
}

func (s *flakyStore) Delete(ctx context.Context, key string) error {
	s.calls.Add(1)
	if s.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if s.failures.Add(-1) >= 0 {
		return errors.New("injected delete failure")
	}
	return s.Memory.Delete(ctx, key)
}

func put(t *testing.T, s objstore.Store, keys ...string) {
	t.Helper()
	for _, k := range keys {
		require.NoError(t, s.PutIfAbsent(context.Background(), k, []byte("x")))
	}
}

func count(m *Metrics, kind Kind, result string) float64 {
	return testutil.ToFloat64(m.deletes.WithLabelValues(string(kind), result))
}

// Deletes are retried, counted by kind and result, and deleting what is gone succeeds.
func TestDeletesAreRetriedAndCounted(t *testing.T) {
	store := &flakyStore{Memory: objstoretest.NewMemory()}
	put(t, store, "a", "b")
	m := NewMetrics(nil)
	d := New(Options{Metrics: m, Retries: 2})
	defer d.Close()
	store.failures.Store(2) // "a" fails twice, then succeeds on its third try
	res := d.Delete(context.Background(), store, Fragment, "a", "b", "gone")
	require.NoError(t, res.Err)
	require.Equal(t, 3, res.Deleted)
	require.EqualValues(t, 3, count(m, Fragment, resultDeleted))
	_, err := store.Stat(context.Background(), "a")
	require.ErrorIs(t, err, objstore.ErrNotFound)

	put(t, store, "c")
	store.failures.Store(100)
	res = d.Delete(context.Background(), store, IndexRun, "c")
	require.Equal(t, 1, res.Failed)
	require.Error(t, res.Err)
	require.EqualValues(t, 1, count(m, IndexRun, resultFailed))
	require.EqualValues(t, 3, store.calls.Load()-5, "one call and two retries")
}

// A delete is bounded by the caller's context: what it did not reach is skipped and counted.
func TestDeletesStopWithTheCallersContext(t *testing.T) {
	store := &flakyStore{Memory: objstoretest.NewMemory()}
	m := NewMetrics(nil)
	d := New(Options{Metrics: m, PerSecond: 1}) // one token now, the next in a second
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := d.Delete(ctx, store, WALEntry, "a", "b", "c", "d")
	require.Equal(t, 1, res.Deleted)
	require.Equal(t, 3, res.Skipped)
	require.EqualValues(t, 3, count(m, WALEntry, resultSkipped))
}

// Abandon runs detached from any caller context; Close waits for calls in flight, cancels them
// past its timeout, and refuses new ones.
func TestCloseWaitsForDeletesInFlightAndRefusesNewOnes(t *testing.T) {
	store := &flakyStore{Memory: objstoretest.NewMemory()}
	put(t, store, "a")
	store.hang.Store(true)
	d := New(Options{CloseTimeout: 100 * time.Millisecond, Retries: -1})
	started := make(chan struct{})
	done := make(chan Result)
	go func() {
		close(started)
		done <- d.Abandon(store, Fragment, "a")
	}()
	<-started
	require.Eventually(t, func() bool { return store.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	closed := time.Now()
	d.Close()
	require.GreaterOrEqual(t, time.Since(closed), 100*time.Millisecond, "Close let the call run for its timeout")
	res := <-done
	require.Equal(t, 1, res.Failed, "cancelled by Close")
	res = d.Delete(context.Background(), store, Fragment, "a")
	require.ErrorIs(t, res.Err, ErrClosed)
	require.Equal(t, 1, res.Skipped)
}
