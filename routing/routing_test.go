package routing_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/routing"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

func members(n int) []routing.Member {
	out := make([]routing.Member, n)
	for i := range out {
		out[i] = routing.Member{Instance: fmt.Sprintf("w%02d", i), URL: fmt.Sprintf("http://w%02d:3000", i)}
	}
	return out
}

// Rendezvous ranks are the same whatever the order of the members, spread stores evenly, and a
// worker joining takes over only the stores it ranks first (about 1/(n+1) of them); the others
// keep their preferred workers.
func TestRankIsStableBalancedAndMovesLittle(t *testing.T) {
	ms := members(8)
	reversed := make([]routing.Member, len(ms))
	for i, m := range ms {
		reversed[len(ms)-1-i] = m
	}
	first := map[string]int{}
	const stores = 8000
	for i := range stores {
		key := routing.StoreKey("rollout", fmt.Sprintf("exp-%d", i))
		a, b := routing.Rank(key, ms, 2), routing.Rank(key, reversed, 2)
		require.Equal(t, a, b)
		require.Len(t, a, 2)
		require.NotEqual(t, a[0], a[1])
		first[a[0].Instance]++
	}
	for w, n := range first {
		require.InDelta(t, stores/8, n, stores/8*0.15, "worker %s is first for %d stores", w, n)
	}
	joined := append(members(8), routing.Member{Instance: "w99"})
	moved := 0
	for i := range stores {
		key := routing.StoreKey("rollout", fmt.Sprintf("exp-%d", i))
		before, after := routing.Rank(key, ms, 1)[0], routing.Rank(key, joined, 1)[0]
		if before != after {
			require.Equal(t, "w99", after.Instance, "a store moves only to the new worker")
			moved++
		}
	}
	require.InDelta(t, stores/9, moved, stores/9*0.2)
	require.Len(t, routing.Rank("k", ms, 0), 8)
	require.Len(t, routing.Rank("k", ms, 20), 8)
	require.Empty(t, routing.Rank("k", nil, 2))
}

// Two workers' memberships see each other through the catalog; a stopped one removes itself, and
// one that stops heartbeating ages out.
func TestMembershipThroughTheCatalog(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	defer cat.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := routing.New(cat, routing.Options{Self: routing.Member{Instance: "a", URL: "http://a"}, Interval: 50 * time.Millisecond, Log: log})
	b := routing.New(cat, routing.Options{Self: routing.Member{Instance: "b", URL: "http://b"}, Interval: 50 * time.Millisecond, Log: log})
	require.Equal(t, []routing.Member{{Instance: "a", URL: "http://a"}}, a.Live(), "before its first refresh, a worker sees itself")
	actx, stopA := context.WithCancel(ctx)
	bctx, stopB := context.WithCancel(ctx)
	aDone, bDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(aDone); a.Run(actx) }()
	go func() { defer close(bDone); b.Run(bctx) }()
	require.Eventually(t, func() bool { return len(a.Live()) == 2 && len(b.Live()) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, a.Preferred("rollout", "x"), b.Preferred("rollout", "x"), "every worker computes the same route")
	stopB()
	<-bDone
	require.Eventually(t, func() bool { return len(a.Live()) == 1 }, 5*time.Second, 10*time.Millisecond)
	// A worker that died without removing itself ages out after three intervals.
	require.NoError(t, cat.HeartbeatWorker(ctx, "ghost", "http://ghost"))
	require.Eventually(t, func() bool { return len(a.Live()) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return len(a.Live()) == 1 }, 5*time.Second, 10*time.Millisecond)
	stopA()
	<-aDone
	live, err := cat.LiveWorkers(ctx, time.Hour)
	require.NoError(t, err)
	require.Len(t, live, 1, "only the ghost's row is left (purged after a day)")
	require.Error(t, cat.HeartbeatWorker(ctx, "", "http://x"))
}
