package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// slowTail answers ranged reads from a memory store at once, except that the calls slow() picks
// wait (10 s, or until the caller's context ends: then it counts the call as cancelled) and the
// calls fail() picks fail.
type slowTail struct {
	objstore.Store
	mu        sync.Mutex
	calls     int
	cancelled int
	slow      func(call int) bool
	fail      func(call int) bool
}

var errFlaky = errors.New("flaky read")

func (s *slowTail) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	s.mu.Lock()
	call := s.calls
	s.calls++
	slow := s.slow != nil && s.slow(call)
	fail := s.fail != nil && s.fail(call)
	s.mu.Unlock()
	if slow {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.cancelled++
			s.mu.Unlock()
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
	if fail {
		return nil, errFlaky
	}
	return s.Store.GetRange(ctx, key, offset, length)
}

func (s *slowTail) nextCall() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func newSlowTail(t *testing.T) (*slowTail, []byte) {
	mem := objstoretest.NewMemory()
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	require.NoError(t, mem.Put(context.Background(), "obj", data))
	return &slowTail{Store: mem}, data
}

// Once the wrapper has timed enough reads, a request that does not answer (one in 33 here) is
// sent a second time, the second answers, and the first is cancelled; the second requests stay
// within the budget (a twentieth of the reads, plus a burst).
func TestHedgedReadsAnswerReadsWhoseFirstRequestHangs(t *testing.T) {
	ctx := context.Background()
	tail, data := newSlowTail(t)
	hedged := objstore.WithHedgedReads(tail)
	const warm, reads = 100, 1000
	for i := range warm {
		_, err := hedged.GetRange(ctx, "obj", int64(i), 16)
		require.NoError(t, err)
	}
	from := tail.nextCall()
	hung := 0
	tail.mu.Lock()
	tail.slow = func(call int) bool {
		if call >= from && (call-from)%33 == 32 {
			hung++
			return true
		}
		return false
	}
	tail.mu.Unlock()
	bounded, cancel := context.WithTimeout(ctx, 5*time.Second) // an unhedged hang fails the test
	defer cancel()
	for i := range reads {
		off := int64(i % 4000)
		got, err := hedged.GetRange(bounded, "obj", off, 16)
		require.NoError(t, err)
		require.Equal(t, data[off:off+16], got)
	}
	tail.mu.Lock()
	defer tail.mu.Unlock()
	require.Positive(t, hung)
	require.Equal(t, hung, tail.cancelled, "every request that hung was hedged, and cancelled once the hedge answered")
	require.GreaterOrEqual(t, hedged.Hedges(), int64(hung))
	require.LessOrEqual(t, hedged.Hedges(), int64((warm+reads)/20+10), "within the budget")
}

// A first request that fails while the second is on its way gives way to the second; when both
// fail the read fails; a large read is never hedged; a cancelled read ends with its context.
// Nothing the wrapper starts outlives a call (goleak, TestMain).
func TestHedgedReadsAnswerWithTheFirstSuccess(t *testing.T) {
	ctx := context.Background()
	tail, data := newSlowTail(t)
	hedged := objstore.WithHedgedReads(tail)
	for range 100 { // the wrapper learns how long reads take
		_, err := hedged.GetRange(ctx, "obj", 0, 16)
		require.NoError(t, err)
	}
	set := func(slow, fail func(int) bool) {
		tail.mu.Lock()
		tail.slow, tail.fail = slow, fail
		tail.mu.Unlock()
	}
	first := tail.nextCall()
	set(func(call int) bool { return call == first }, func(call int) bool { return call == first })
	got, err := hedged.GetRange(ctx, "obj", 32, 16)
	require.NoError(t, err, "the hedge answered while the first request waited, then failed")
	require.Equal(t, data[32:48], got)

	first = tail.nextCall()
	set(nil, func(call int) bool { return call >= first })
	_, err = hedged.GetRange(ctx, "obj", 0, 16)
	require.ErrorIs(t, err, errFlaky, "the first request failed before any hedge: the read fails")

	before := hedged.Hedges()
	set(nil, nil)
	_, err = hedged.GetRange(ctx, "obj", 0, 2<<20)
	require.NoError(t, err)
	require.Equal(t, before, hedged.Hedges(), "a read over 1 MiB is never hedged")

	set(func(int) bool { return true }, nil) // every request waits 10 s
	cctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = hedged.GetRange(cctx, "obj", 0, 16)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second, "the caller's deadline ends both requests")
}
