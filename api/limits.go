// Request limits: the body idle timeout (a client that stops sending mid-body gets 408 instead of
// holding a worker forever) and the in-flight blob byte budget (blob uploads and downloads beyond
// it get 503 + Retry-After instead of exhausting memory).
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
	return n, err
}

// bodyIdleTimeout installs idleBody on every request with a body.
func bodyIdleTimeout(timeout time.Duration, timeouts prometheus.Counter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if timeout > 0 && c.Request().Body != nil && c.Request().Body != http.NoBody {
				rc := http.NewResponseController(c.Response().Writer)
				body := &idleBody{ReadCloser: c.Request().Body, rc: rc, timeout: timeout, timeouts: timeouts}
				c.Request().Body = body
				defer func() {
					if body.timedOut {
						// The rest of the body will never come: answer and drop the connection
						// (the expired deadline stops the server from waiting for it).
						c.Response().Header().Set(echo.HeaderConnection, "close")
						return
					}
					_ = rc.SetReadDeadline(time.Time{})
				}()
			}
			return next(c)
		}
	}
}

// blobBudget bounds the blob bytes in flight in this process (0 = unlimited). A request that
// does not fit is refused at once (never queued), unless nothing else is in flight: a lone
// oversized request is admitted.
type blobBudget struct {
	mu       sync.Mutex
	capacity int64
	inFlight int64
	rejected prometheus.Counter
}

func (b *blobBudget) reserve(n int64) (release func(), err error) {
	if b.capacity <= 0 {
		return func() {}, nil
	}
	if n < 0 || n > b.capacity {
		n = b.capacity
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight > 0 && b.inFlight+n > b.capacity {
		b.rejected.Inc()
		return nil, &APIError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded, RetryAfter: 2 * time.Second,
			Message: "too many blob bytes in flight on this worker; retry shortly"}
	}
	b.inFlight += n
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.inFlight -= n
			b.mu.Unlock()
		})
	}, nil
}
