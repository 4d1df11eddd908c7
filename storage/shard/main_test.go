package shard

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a writer starts (committer, collector, retirements, seals) is stopped and
// waited for by Close: none may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
