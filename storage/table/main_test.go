package table

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/strata-store/strata/internal/testenv"
)

// No goroutine outlives the tests (but the idle keep-alive connections of an object store's HTTP
// client, which belong to its transport: the S3 model test and the object-store benchmarks).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.IdleHTTPConnections()...) }
