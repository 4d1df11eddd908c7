// The request deadline: every request's context ends after a fixed time, and when a handler is
// still running then — a storage call blocked in a syscall that ignores its context, say — the
// client gets 503 at once instead of waiting for the syscall.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

// WithDeadline serves next with each request's context ending after timeout (0 = no deadline).
// The handler runs in its own goroutine; if it has not started its answer when the deadline
// passes, the client gets 503 `DEADLINE_EXCEEDED` (no Retry-After) and the connection is closed, and
// whatever the handler writes later is dropped (the goroutine ends when its blocked call does).
// A handler that has started answering (a streaming response) is waited for: its status is
// already sent, and its writes are bounded by the server's write timeouts.
func WithDeadline(next http.Handler, timeout time.Duration) http.Handler {
	if timeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		dw := &deadlineWriter{w: w, header: w.Header().Clone()}
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			next.ServeHTTP(dw, r.WithContext(ctx))
		}()
		// The deadline's own timer, not ctx.Done(): the server also cancels the request's context
		// when reading the connection fails (a body that stalled past the idle timeout), and the
		// handler answers that itself (408), promptly, since its context is done.
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case p := <-done:
			if p != nil {
				panic(p)
			}
			return
		case <-timer.C:
		}
		dw.mu.Lock()
		if dw.wroteHeader {
			dw.mu.Unlock()
			if p := <-done; p != nil { // answering already: wait for it
				panic(p)
			}
			return
		}
		dw.timedOut = true
		dw.mu.Unlock()
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Connection", "close")
		// No Retry-After and its own code: the handler may still finish (an append may still
		// become durable), so a client checks before it sends the request again.
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(ErrorBody{Error: ErrorDetail{Code: CodeDeadlineExceeded,
			Message: "the request did not finish within the request deadline (" + timeout.String() + "); it may still take effect: check before retrying"}})
	})
}

// deadlineWriter is the handler's ResponseWriter under WithDeadline: its own header map (the
// handler's goroutine may still be setting headers when the deadline answers) and, once the
// deadline has answered, writes that go nowhere. mu guards every use of the real writer.
type deadlineWriter struct {
	w           http.ResponseWriter
	mu          sync.Mutex
	header      http.Header
	wroteHeader bool
	timedOut    bool
}

var errDeadlineAnswered = errors.New("api: the request deadline has answered this request")

func (d *deadlineWriter) Header() http.Header { return d.header }

func (d *deadlineWriter) WriteHeader(code int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writeHeaderLocked(code)
}

func (d *deadlineWriter) writeHeaderLocked(code int) {
	if d.timedOut || d.wroteHeader {
		return
	}
	d.wroteHeader = true
	dst := d.w.Header()
	for k, v := range d.header {
		dst[k] = v
	}
	d.w.WriteHeader(code)
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timedOut {
		return 0, errDeadlineAnswered
	}
	d.writeHeaderLocked(http.StatusOK)
	return d.w.Write(p)
}

func (d *deadlineWriter) Flush() {
	_ = d.FlushError()
}

func (d *deadlineWriter) FlushError() error {
	return d.control(func(rc *http.ResponseController) error {
		d.writeHeaderLocked(http.StatusOK)
		return rc.Flush()
	})
}

// SetReadDeadline and SetWriteDeadline reach the connection (http.ResponseController finds
// them) until the deadline has answered.
func (d *deadlineWriter) SetReadDeadline(t time.Time) error {
	return d.control(func(rc *http.ResponseController) error { return rc.SetReadDeadline(t) })
}

func (d *deadlineWriter) SetWriteDeadline(t time.Time) error {
	return d.control(func(rc *http.ResponseController) error { return rc.SetWriteDeadline(t) })
}

// control runs f on the real writer's controller under mu, unless the deadline has answered.
func (d *deadlineWriter) control(f func(*http.ResponseController) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timedOut {
		return errDeadlineAnswered
	}
	return f(http.NewResponseController(d.w))
}
