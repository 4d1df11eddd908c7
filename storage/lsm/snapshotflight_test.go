package lsm

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/table"
)

// Every read gets a snapshot listed after it asked, however many reads arrive together, and
// reads that arrive together share listings.
func TestReadsShareSnapshotsListedAfterTheyArrive(t *testing.T) {
	var f snapshotFlights
	var clock, loads atomic.Uint64
	load := func(context.Context) (*Snapshot, error) {
		loads.Add(1)
		started := clock.Add(1)
		time.Sleep(2 * time.Millisecond) // a listing takes a while: reads pile up behind it
		return &Snapshot{Table: &table.Manifest{Version: started}}, nil
	}
	const readers, reads = 16, 20
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for range reads {
				arrived := clock.Add(1)
				snap, err := f.take(context.Background(), load)
				require.NoError(t, err)
				require.Greater(t, snap.Table.Version, arrived, "a read used a listing that started before it arrived")
			}
		})
	}
	wg.Wait()
	require.Less(t, loads.Load(), uint64(readers*reads/2), "reads arriving together share listings")

	before := loads.Load()
	_, err := f.take(context.Background(), load)
	require.NoError(t, err)
	require.Equal(t, before+1, loads.Load(), "a lone read takes its own snapshot at once")
}

// The read that takes a shared snapshot giving up does not fail the reads that joined it, and a
// joined read that gives up returns at once.
func TestASharedSnapshotOutlivesTheReadThatTookIt(t *testing.T) {
	var f snapshotFlights
	release := make(chan struct{})
	var loaded atomic.Int32
	load := func(ctx context.Context) (*Snapshot, error) {
		if loaded.Add(1) == 1 {
			<-release // the first listing is slow
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return &Snapshot{Table: &table.Manifest{Version: 7}}, nil
	}
	first := make(chan error, 1)
	go func() { _, err := f.take(context.Background(), load); first <- err }()
	require.Eventually(t, func() bool { return loaded.Load() == 1 }, time.Second, time.Millisecond)

	// Two reads queue behind the slow listing: the first of them will lead the next one.
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() { _, err := f.take(leaderCtx, load); leader <- err }()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.next != nil }, time.Second, time.Millisecond)
	joined := make(chan *Snapshot, 1)
	go func() {
		snap, err := f.take(context.Background(), load)
		if err != nil {
			snap = nil
		}
		joined <- snap
	}()
	giveUpCtx, giveUp := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := f.take(giveUpCtx, load); gaveUp <- err }()
	time.Sleep(10 * time.Millisecond)
	giveUp()
	require.ErrorIs(t, <-gaveUp, context.Canceled, "a joined read that gives up returns without waiting")

	cancelLeader()
	close(release)
	require.NoError(t, <-first)
	<-leader
	snap := <-joined
	require.NotNil(t, snap, "the leader's cancellation failed a read that joined it")
	require.Equal(t, uint64(7), snap.Table.Version)
}
