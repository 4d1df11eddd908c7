// Storage faults: the failures of an object-store call that an operator fixes (a full disk, a
// permission, an unreachable endpoint) and a caller retries later, as opposed to a missing
// object, a lost commit race or bad input. Fault names one in words a person reads; callers map
// it to their own answers (an HTTP 503, a maintenance error type).
package objstore

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// ErrUnavailable: the object store answered with an error that is none of the package's others
// (an S3 endpoint that is unreachable, refuses, or fails the request).
var ErrUnavailable = errors.New("object store unavailable")

// Fault names the storage fault err stands for, or "" when it is none.
func Fault(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "disk full"
	case errors.Is(err, syscall.EIO):
		return "I/O error"
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return "permission denied or read-only"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timed out"
	case errors.Is(err, ErrUnavailable):
		return "object store unavailable"
	}
	return ""
}

// ErrStopped: the store will not serve this handle again (it was closed, or the process that
// owns it is going away); retrying cannot help.
var ErrStopped = errors.New("object store stopped")

// Retryable reports whether trying the call that failed with err again may succeed: a fault
// of the store or the network may pass; bad input, a permission, or a stopped store will not.
func Retryable(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrInvalidKey), errors.Is(err, ErrStopped), errors.Is(err, ErrUnsupported),
		errors.Is(err, context.Canceled),
		errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return false
	}
	return true
}
