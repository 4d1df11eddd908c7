// The JSON error envelope {"error":{"code","message"}} and the mapping from domain errors to
// HTTP statuses. Every error a handler returns goes through ErrorHandler; internals are logged,
// never sent to the client.
package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/datagen"
	"github.com/strata-store/strata/quota"
	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/predicate"
	"github.com/strata-store/strata/storage/table"
)

// Error codes, matching lance-context's envelope.
const (
	CodeNotFound        = "NOT_FOUND"
	CodeAlreadyExists   = "ALREADY_EXISTS"
	CodeInvalidRequest  = "INVALID_REQUEST"
	CodeInternal        = "INTERNAL"
	CodeOverloaded      = "OVERLOADED"
	CodeTimeout         = "REQUEST_TIMEOUT"
	CodeUnauthorized    = "UNAUTHORIZED"
	CodeForbidden       = "FORBIDDEN" // authenticated, but the token does not allow this request
	CodeMethodNotAllow  = "METHOD_NOT_ALLOWED"
	CodePayloadTooLarge = "PAYLOAD_TOO_LARGE"
	// CodeUnsupportedMediaType: the body's Content-Type is not one the route takes (415).
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	// CodeDeadlineExceeded: the request did not finish within the request deadline; it may still
	// take effect, so a client must check before it retries (no Retry-After).
	CodeDeadlineExceeded = "DEADLINE_EXCEEDED"
	CodeUnavailable      = "UNAVAILABLE" // a dependency (the PostgreSQL catalog, Temporal) is down: retry
	// CodeStorageUnavailable: the store's storage failed (disk full, I/O error, permission,
	// timeout); retry after Retry-After, an operator may have to act.
	CodeStorageUnavailable = "STORAGE_UNAVAILABLE"
	// CodeFenced: another process with this worker's instance id owns the store's write shard;
	// retrying on this worker cannot succeed (no Retry-After), another worker can serve it.
	CodeFenced = "FENCED"
	// CodeCursorExpired: a change-feed position whose rows were released (410); the error's
	// restart member says where to start again.
	CodeCursorExpired = "CURSOR_EXPIRED"
	// CodeSnapshotExpired: a read token that expired or was released (410).
	CodeSnapshotExpired = "SNAPSHOT_EXPIRED"
	// CodeQuotaExceeded: the append's tenant is at one of its quotas (429 with Retry-After;
	// nothing was written, so the same request may be sent again). The error's quota member
	// names the limit.
	CodeQuotaExceeded = "QUOTA_EXCEEDED"
)

// ErrorBody is the wire shape of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the code and human-readable message of an error response.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Restart (410 CURSOR_EXPIRED only): where a change-feed consumer can start again.
	Restart *FeedRestart `json:"restart,omitempty"`
	// Quota (429 QUOTA_EXCEEDED only): the limit reached — rows, bytes, pending_generations or
	// append_rows_per_second — and its tenant.
	Quota  string `json:"quota,omitempty"`
	Tenant string `json:"tenant,omitempty"`
}

// FeedRestart is where a consumer whose position expired starts again: read the store's base
// table at TableVersion (?source=base&version=…), then the feed from Cursor.
type FeedRestart struct {
	TableVersion uint64 `json:"table_version"`
	Cursor       string `json:"cursor"`
}

// APIError is an error with an explicit status and code. RetryAfter, when set, becomes a
// Retry-After header (503s and 429s).
type APIError struct {
	Status        int
	Code          string
	Message       string
	RetryAfter    time.Duration
	Restart       *FeedRestart
	Quota, Tenant string
	Err           error
}

func (e *APIError) Error() string { return e.Message }
func (e *APIError) Unwrap() error { return e.Err }

// errorFor classifies err into a status, code and client-safe message.
func errorFor(err error) *APIError {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if s, ok := he.Message.(string); ok {
			msg = s
		}
		code := CodeInternal
		switch he.Code {
		case http.StatusNotFound:
			code = CodeNotFound
		case http.StatusMethodNotAllowed:
			code = CodeMethodNotAllow
		case http.StatusRequestEntityTooLarge:
			code = CodePayloadTooLarge
		case http.StatusUnauthorized:
			code = CodeUnauthorized
		case http.StatusRequestTimeout:
			code = CodeTimeout
		case http.StatusUnsupportedMediaType:
			code = CodeUnsupportedMediaType
		case http.StatusServiceUnavailable:
			code = CodeOverloaded
		default:
			if he.Code >= 400 && he.Code < 500 {
				code = CodeInvalidRequest
			}
		}
		return &APIError{Status: he.Code, Code: code, Message: msg, Err: err}
	}
	var over *quota.Exceeded
	if errors.As(err, &over) {
		return &APIError{Status: http.StatusTooManyRequests, Code: CodeQuotaExceeded, Message: over.Error(),
			RetryAfter: over.RetryAfter, Quota: over.Quota, Tenant: over.Tenant, Err: err}
	}
	var expired *lsm.FeedExpiredError
	if errors.As(err, &expired) {
		return &APIError{Status: http.StatusGone, Code: CodeCursorExpired, Err: err,
			Message: fmt.Sprintf("the cursor's position was released (generation %d of shard %s is gone: no consumer held it, or it passed the retention bound); "+
				"restart by reading the store at table version %d, then the feed from restart.cursor", expired.Generation, expired.Shard, expired.RestartVersion),
			Restart: &FeedRestart{TableVersion: expired.RestartVersion, Cursor: expired.RestartCursor.String()}}
	}
	switch {
	case errors.Is(err, lsm.ErrBadCursor):
		return &APIError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case errors.Is(err, lsm.ErrCutExpired), errors.Is(err, catalog.ErrGone):
		return &APIError{Status: http.StatusGone, Code: CodeSnapshotExpired, Err: err,
			Message: "the read token expired or was released (" + err.Error() + "); take a new one"}
	case errors.Is(err, lsm.ErrOverloaded):
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded, Message: err.Error(), RetryAfter: 5 * time.Second, Err: err}
	case errors.Is(err, lsm.ErrFenced):
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeFenced, Err: err,
			Message: "another process with this worker's instance id has claimed the store's write shard, so this worker can no longer append to it; " +
				"an operator must give each process its own --instance-id and restart this worker (other workers can serve the store meanwhile)"}
	case errors.Is(err, lsm.ErrClosed):
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded, Message: "the store is being closed on this worker; retry", RetryAfter: time.Second, Err: err}
	case errors.Is(err, table.ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error(), Err: err}
	case errors.Is(err, sqlquery.ErrStatement):
		return &APIError{Status: http.StatusBadRequest, Code: CodeInvalidSQL, Message: err.Error(), Err: err}
	case errors.Is(err, sqlquery.ErrTimeout):
		return &APIError{Status: http.StatusRequestTimeout, Code: CodeTimeout, Message: err.Error(), Err: err}
	case errors.Is(err, sqlquery.ErrBusy):
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded, Message: err.Error(), RetryAfter: time.Second, Err: err}
	case errors.Is(err, sqlquery.ErrUnavailable):
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: err.Error(), Err: err}
	case errors.Is(err, predicate.ErrInvalid):
		return &APIError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case errors.Is(err, datagen.ErrInvalid):
		return &APIError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case errors.Is(err, datagen.ErrTooLarge):
		return &APIError{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge, Message: err.Error(), Err: err}
	case errors.Is(err, table.ErrSchema):
		return &APIError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case errors.Is(err, catalog.ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error(), Err: err}
	case errors.Is(err, catalog.ErrConflict):
		return &APIError{Status: http.StatusConflict, Code: CodeAlreadyExists, Message: err.Error(), Err: err}
	case errors.Is(err, catalog.ErrInvalid):
		return &APIError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case catalog.IsUnavailable(err):
		// Resident stores keep serving without the catalog; anything that needs it waits.
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "the catalog (PostgreSQL) is unavailable; retry", RetryAfter: 2 * time.Second, Err: err}
	case objstore.Fault(err) != "": // an operator fixes it, a client retries: never a bare 500
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeStorageUnavailable, RetryAfter: 5 * time.Second, Err: err,
			Message: "the store's storage is unavailable (" + objstore.Fault(err) + "); retry later"}
	}
	return &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", Err: err}
}

func invalid(format string, args ...any) error {
	return &APIError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// ErrorHandler is the Echo HTTPErrorHandler: it writes the envelope and logs server-side faults.
func ErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		e := errorFor(err)
		if name := c.Param("name"); name != "" && (e.Code == CodeStorageUnavailable || e.Code == CodeFenced) {
			e = &APIError{Status: e.Status, Code: e.Code, RetryAfter: e.RetryAfter, Err: e.Err, Restart: e.Restart,
				Message: fmt.Sprintf("store %q: %s", name, e.Message)}
		}
		if e.Status >= 500 && e.Code != CodeFenced { // fenced stores are logged once, by the store cache
			log.Error("request failed", "method", c.Request().Method, "route", c.Path(), "store", c.Param("name"),
				"status", e.Status, "err", err)
		}
		if e.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
		}
		// HEAD too: its answer carries GET's headers, and net/http drops the body.
		_ = c.JSON(e.Status, ErrorBody{Error: ErrorDetail{Code: e.Code, Message: e.Message, Restart: e.Restart, Quota: e.Quota, Tenant: e.Tenant}})
	}
}
