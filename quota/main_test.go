package quota_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine outlives the tests (a Gate owns none).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
