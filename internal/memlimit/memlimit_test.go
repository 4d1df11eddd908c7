package memlimit

import (
	"math"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// No goroutine outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTheLimitIsTheBudgetsPlusHeadroomWithinTheLiveFloorAndTheCeiling(t *testing.T) {
	const MiB = 1 << 20
	none := int64(math.MaxInt64)
	for _, c := range []struct {
		name                                    string
		budgeted, live, nonHeap, headroom, ceil int64
		want                                    int64
	}{
		{"budgets plus headroom plus the runtime's own memory", 300 * MiB, 200 * MiB, 20 * MiB, 64 * MiB, none, 384 * MiB},
		{"never below 1.15x what is live", 100 * MiB, 400 * MiB, 20 * MiB, 64 * MiB, none, 480 * MiB},
		{"never above the limit the process started with", 300 * MiB, 200 * MiB, 20 * MiB, 64 * MiB, 256 * MiB, 256 * MiB},
		{"an idle process", 0, 8 * MiB, 10 * MiB, 64 * MiB, none, 74 * MiB},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Limit(c.budgeted, c.live, c.nonHeap, c.headroom, 1.15, c.ceil))
		})
	}
}

// The governor follows its sources and puts the starting limit back when stopped.
func TestTheGovernorFollowsItsSourcesAndRestoresTheLimit(t *testing.T) {
	start := debug.SetMemoryLimit(-1)
	const GiB = 1 << 30
	var held atomic.Int64
	held.Store(4 * GiB) // far above anything live in a test binary: the budgets decide
	reg := prometheus.NewRegistry()
	g := Start(Config{Headroom: 64 << 20, Interval: 5 * time.Millisecond}, reg)
	g.Track(held.Load)
	require.Eventually(t, func() bool {
		lim := debug.SetMemoryLimit(-1)
		return lim >= 4*GiB+64<<20 && lim < 5*GiB
	}, 5*time.Second, 5*time.Millisecond)
	held.Store(8 * GiB)
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) >= 8*GiB+64<<20 }, 5*time.Second, 5*time.Millisecond)
	require.InDelta(t, float64(debug.SetMemoryLimit(-1)), testutil.ToFloat64(g.limit), float64(2<<20))
	g.Stop()
	require.Equal(t, start, debug.SetMemoryLimit(-1))
}

func TestNoHeadroomMeansNoGovernor(t *testing.T) {
	g := Start(Config{}, nil)
	require.Nil(t, g)
	g.Track(func() int64 { return 1 }) // a nil governor ignores its sources
	g.Stop()
}
