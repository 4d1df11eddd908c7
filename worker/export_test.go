// Test-only API: helpers the tests of this package (internal and external) use, kept out of
// the production build.
package worker

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/workflows"
)

// EnsureSweepSchedule creates the sweep schedule alone (tests use a short interval).
func EnsureSweepSchedule(ctx context.Context, c client.Client, interval time.Duration, in workflows.SweepInput) error {
	return ensureSchedule(ctx, c, workflows.SweepScheduleID, interval, workflows.WorkflowSweep, in,
		"Strata: queue maintenance for stores whose catalog stats need it")
}
