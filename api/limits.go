// Request limits: the body idle timeout (a client that stops sending mid-body gets 408 instead of
// holding a worker forever), the in-flight request-memory budget (bodies being read and decoded
// at once) and the in-flight blob byte budget (blob uploads and downloads); past a budget a
// request gets 503 + Retry-After instead of exhausting memory.
package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// errBodyIdle: no body bytes arrived within the idle timeout.
var errBodyIdle = &APIError{Status: http.StatusRequestTimeout, Code: CodeTimeout, Message: "the request body stalled: no data within the idle timeout"}

// idleBody renews the connection's read deadline before every read of the body.
type idleBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	timeout  time.Duration
	timeouts prometheus.Counter
	timedOut bool
	sawEOF   bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.timedOut { // sticky: a decoder that reads again after the error counts one timeout
		return 0, errBodyIdle
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout)) // unsupported (tests): no deadline
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		b.timeouts.Inc()
		b.timedOut = true
		return n, errBodyIdle
	}
	if errors.Is(err, io.EOF) {
		b.sawEOF = true
	}
	return n, err
}

// bodyIdleTimeout installs idleBody on every request with a body. A body the handler did not read
// to its end (refused before reading: 401, 400, 413...) is not drained either: the connection is
// closed after the answer, with an expired read deadline, so a client that never finishes its
// body cannot hold the connection (the server would otherwise wait to drain it).
func bodyIdleTimeout(timeout time.Duration, timeouts prometheus.Counter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if timeout > 0 && c.Request().Body != nil && c.Request().Body != http.NoBody {
				rc := http.NewResponseController(c.Response().Writer)
				body := &idleBody{ReadCloser: c.Request().Body, rc: rc, timeout: timeout, timeouts: timeouts}
				c.Request().Body = body
				defer func() {
					if !body.sawEOF {
						// The rest of the body is not wanted (or will never come): answer and
						// drop the connection; the expired deadline stops the server from
						// waiting to drain it.
						c.Response().Header().Set(echo.HeaderConnection, "close")
						_ = rc.SetReadDeadline(time.Now())
						return
					}
					_ = rc.SetReadDeadline(time.Time{})
				}()
			}
			return next(c)
		}
	}
}

// byteBudget bounds the bytes of one kind in flight in this process (0 = unlimited). A request
// that does not fit is refused at once (never queued), unless nothing else is in flight: a lone
// oversized request is admitted.
type byteBudget struct {
	mu       sync.Mutex
	what     string // named in the 503 message: "blob bytes", "request bytes"
	capacity int64
	inFlight int64
	rejected prometheus.Counter
}

func (b *byteBudget) reserve(n int64) (release func(), err error) {
	got, ok := b.tryReserve(n)
	if !ok {
		return nil, b.refusal()
	}
	var once sync.Once
	return func() { once.Do(func() { b.free(got) }) }, nil
}

// tryReserve reserves n bytes (clamped, see clamp) and returns what it reserved, for free.
func (b *byteBudget) tryReserve(n int64) (int64, bool) {
	if b.capacity <= 0 {
		return 0, true
	}
	n = b.clamp(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight > 0 && b.inFlight+n > b.capacity {
		b.rejected.Inc()
		return 0, false
	}
	b.inFlight += n
	return n, true
}

// fits reports whether n bytes (clamped) could be reserved now, reserving nothing.
func (b *byteBudget) fits(n int64) bool {
	if b.capacity <= 0 {
		return true
	}
	n = b.clamp(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight == 0 || b.inFlight+n <= b.capacity
}

// held is the bytes reserved right now.
func (b *byteBudget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight
}

// free returns what tryReserve reserved.
func (b *byteBudget) free(reserved int64) {
	if reserved == 0 {
		return
	}
	b.mu.Lock()
	b.inFlight -= reserved
	b.mu.Unlock()
}

// clamp: a reservation counts at most the whole capacity (unknown sizes, n < 0, count that).
func (b *byteBudget) clamp(n int64) int64 {
	if n < 0 || n > b.capacity {
		return b.capacity
	}
	return n
}

func (b *byteBudget) refusal() error {
	return &APIError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded, RetryAfter: 2 * time.Second,
		Message: "too many " + b.what + " in flight on this worker; retry shortly"}
}

// requestMemoryFactor: a body being decoded is held about twice — the bytes read and the
// columns decoded from them (or the WAL frame encoded from those) — so a request reserves twice
// its body.
const requestMemoryFactor = 2

// budgetedBody reserves request memory as a body arrives, a step at a time; a refusal ends the
// read with the budget's 503. Readers of the body allocate at most about what has arrived (see
// readBody), so the reservation follows the memory.
type budgetedBody struct {
	io.ReadCloser
	budget   *byteBudget
	covered  int64 // body bytes the reservations cover
	reserved int64 // what the budget counts for them (returned when the request ends)
	read     int64
}

// budgetStep is how many body bytes one reservation covers: 1 MiB, or a 64th of a smaller
// budget, so a body that has sent little holds little.
func (b *byteBudget) budgetStep() int64 {
	return max(4<<10, min(1<<20, b.capacity/64))
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	step := b.budget.budgetStep()
	for b.read > b.covered {
		got, ok := b.budget.tryReserve(step * requestMemoryFactor)
		if !ok {
			return n, b.budget.refusal()
		}
		b.covered += step
		b.reserved += got
	}
	return n, err
}

// requestMemory reserves memory for a request body as it arrives, step by step (a body that
// trickles in holds only what it sent), released when the handler returns. A body whose declared
// length would not fit the budget now is refused before a byte of it is read.
func requestMemory(budget *byteBudget) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if budget.capacity <= 0 || r.Body == nil || r.Body == http.NoBody {
				return next(c)
			}
			if r.ContentLength >= 0 && !budget.fits(r.ContentLength*requestMemoryFactor) {
				budget.rejected.Inc()
				return budget.refusal()
			}
			body := &budgetedBody{ReadCloser: r.Body, budget: budget}
			r.Body = body
			defer func() { budget.free(body.reserved) }()
			return next(c)
		}
	}
}
