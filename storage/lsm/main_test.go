package lsm

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/strata-store/strata/internal/testenv"
)

// Every goroutine a store starts (committers, collectors, retirements, seals) is stopped and
// waited for by Close: none may outlive the tests. Idle keep-alive connections of an object
// store's HTTP client (the suite's run on S3, Azure or GCS) belong to the client's transport,
// not to a store.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.IdleHTTPConnections()...)
}
