package objstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine outlives the tests (but idle HTTP keep-alives of the S3 client).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of the S3 client's HTTP transport (closed by the runtime).
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}
