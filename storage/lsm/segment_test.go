package lsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
)

// segmentSizes runs a test with the default segment size and with one segment per group commit.
func segmentSizes(t *testing.T, test func(t *testing.T, segmentBytes int64)) {
	for _, size := range []int64{0, 1} {
		t.Run(fmt.Sprint("segment-bytes-", size), func(t *testing.T) { test(t, size) })
	}
}

func segmentBytes(n int64) func(*Options) {
	return func(o *Options) { withSegments(o); o.Writer.SegmentBytes = n }
}

func TestAFencedWritersLaterFramesAreNeverRead(t *testing.T) {
	segmentSizes(t, func(t *testing.T, size int64) {
		ctx := context.Background()
		e := newInPlaceEnv(t, objstoretest.NewMemory())
		old := e.open("w", segmentBytes(size))
		appendIDs(t, old, e.mem, 1, "acked-before")
		// Another process with the same instance id claims the shard (opening does); the old
		// writer does not know yet, writes its next group, and only then finds the new epoch.
		claimer := e.open("w", segmentBytes(size))
		appendIDs(t, claimer, e.mem, 3, "acked-after")
		stray := rows(e.mem, []string{"stray"}, 2)
		_, err := old.Append(ctx, stray)
		stray.Release()
		require.ErrorIs(t, err, ErrFenced)
		strayWritten := false
		objs, err := objstore.ListAll(ctx, e.objects, shard.SegmentPrefix(old.Shard()))
		require.NoError(t, err)
		for _, o := range objs {
			data, err := e.objects.Get(ctx, o.Key)
			require.NoError(t, err)
			strayWritten = strayWritten || bytes.Contains(data, []byte("payload-stray"))
		}
		require.True(t, strayWritten, "the fenced writer's frame is in a segment (the case under test)")

		// A third claim scans everything again: the stray frame lies past the length the second
		// claim listed for that segment (or in a segment its epoch created after that claim).
		third := e.open("w", segmentBytes(size))
		require.EqualValues(t, 1, value(t, third, "acked-before"))
		require.EqualValues(t, 3, value(t, third, "acked-after"))
		require.EqualValues(t, -1, value(t, third, "stray"), "a fenced writer's unacknowledged group never shows up")
		require.NoError(t, third.Flush(ctx))
		require.EqualValues(t, -1, value(t, e.open("reader"), "stray"))
	})
}

// failingFrames fails, after a pause, every segment write whose bytes contain marker.
type failingFrames struct {
	objstore.Store
	marker []byte
}

var _ objstore.InPlaceWriter = (*failingFrames)(nil)

func (f *failingFrames) WritesInPlace() bool { return objstore.WritesInPlace(f.Store) }

func (f *failingFrames) OpenWriter(ctx context.Context, key string, opts objstore.WriterOptions) (objstore.ObjectWriter, error) {
	w, err := objstore.OpenWriter(ctx, f.Store, key, opts)
	return &failingFrameWriter{ObjectWriter: w, marker: f.marker}, err
}

type failingFrameWriter struct {
	objstore.ObjectWriter
	marker []byte
}

func (w *failingFrameWriter) WriteAt(ctx context.Context, p []byte, off int64) error {
	if bytes.Contains(p, w.marker) {
		time.Sleep(100 * time.Millisecond)
		return objstoretest.ErrInjected
	}
	return w.ObjectWriter.WriteAt(ctx, p, off)
}

func TestAFailedFrameFailsTheFramesAfterItInItsSegment(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &failingFrames{Store: objstoretest.NewMemory(), marker: []byte("payload-failed")})
	s := e.open("w", withSegments)
	appendIDs(t, s, e.mem, 1, "first")
	// The next group's frame write is slow and then fails; a group reserved after it is written
	// fine but must not be acknowledged: a scan stops at the failed frame and never reaches it.
	w := s.residentWriter()
	position := w.NextPosition
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, id := range []string{"failed", "after-failed"} {
		taken := position()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := rows(e.mem, []string{id}, 2)
			defer rec.Release()
			_, errs[i] = s.Append(ctx, rec)
		}()
		for position() == taken { // the append's group has its position: the next one comes after
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	require.ErrorIs(t, errs[0], objstoretest.ErrInjected)
	require.ErrorIs(t, errs[1], shard.ErrEarlierFrameFailed)
	appendIDs(t, s, e.mem, 3, "next") // in a new segment
	require.Len(t, objectsUnder(t, e.objects, shard.SegmentPrefix(s.Shard())), 2, "the writer moved to a new segment")
	require.EqualValues(t, 3, value(t, s, "next"))
	require.EqualValues(t, -1, value(t, s, "after-failed"))

	// A new process (as after a crash: nothing was sealed) replays only what was acknowledged.
	again := e.open("w", withSegments)
	require.EqualValues(t, 1, value(t, again, "first"))
	require.EqualValues(t, 3, value(t, again, "next"))
	require.EqualValues(t, -1, value(t, again, "failed"))
	require.EqualValues(t, -1, value(t, again, "after-failed"), "its frame is intact, but after the failed one")
}

func TestSegmentsAreDeletedOnceEverythingTheyHoldIsMerged(t *testing.T) {
	ctx := context.Background()
	e := newInPlaceEnv(t, objstoretest.NewMemory())
	s := e.open("w", segmentBytes(1)) // a segment per group commit
	for i := range 5 {
		appendIDs(t, s, e.mem, int64(i), fmt.Sprint("k", i))
	}
	require.Len(t, objectsUnder(t, e.objects, shard.SegmentPrefix(s.Shard())), 5)
	require.Eventually(t, func() bool { // a segment is retired once its last group is finished
		return s.residentWriter().RetiredSegments() == 4
	}, 2*time.Second, time.Millisecond)
	require.NoError(t, s.Flush(ctx))
	m, err := shard.ReadManifest(ctx, e.objects, s.Shard())
	require.NoError(t, err)
	require.Len(t, m.Segments, 4, "the seal lists the segments the writer moved past, not the active one")
	for _, ref := range m.Segments {
		require.Positive(t, ref.Length)
		require.Equal(t, ref.First, ref.Last, "one group each")
	}

	// Another process merges: the listed segments are garbage once their generation is merged.
	merger := e.open("maintenance")
	_, err = merger.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return len(objectsUnder(t, e.objects, shard.SegmentPrefix(s.Shard()))) == 1
	}, 2*time.Second, 10*time.Millisecond, "only the active segment is left")
	m, err = shard.ReadManifest(ctx, e.objects, s.Shard())
	require.NoError(t, err)
	require.Empty(t, m.Segments)
	for i := range 5 {
		require.EqualValues(t, i, value(t, merger, fmt.Sprint("k", i)))
	}

	// A later claim closes the old active segment; once merged, it goes too.
	appendIDs(t, s, e.mem, 9, "k9")
	require.NoError(t, s.Close(ctx))
	again := e.open("w", segmentBytes(1))
	require.NoError(t, again.Flush(ctx))
	_, err = merger.MergeShard(ctx, s.Shard(), MergeOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return len(objectsUnder(t, e.objects, shard.SegmentPrefix(s.Shard()))) == 0
	}, 2*time.Second, 10*time.Millisecond, "no segment is left: the new writer has not written any")
	require.EqualValues(t, 9, value(t, merger, "k9"))
}

func TestADamagedListedSegmentFailsTheClaimLoudly(t *testing.T) {
	ctx := context.Background()
	e := newInPlaceEnv(t, objstoretest.NewMemory())
	s := e.open("w", segmentBytes(1))
	appendIDs(t, s, e.mem, 1, "a")
	appendIDs(t, s, e.mem, 2, "b")
	require.NoError(t, s.Close(ctx)) // the closing seal lists both segments
	m, err := shard.ReadManifest(ctx, e.objects, s.Shard())
	require.NoError(t, err)
	require.NotEmpty(t, m.Segments)
	// Make the shard need replay from a listed segment, then damage it.
	_, _, err = shard.UpdateManifest(ctx, e.objects, s.Shard(), func(cur *shard.ShardManifest) (*shard.ShardManifest, error) {
		cur.ReplayAfter, cur.Generations = 0, nil
		return cur, nil
	})
	require.NoError(t, err)
	key := shard.SegmentKey(s.Shard(), m.Segments[0].Name)
	data, err := e.objects.Get(ctx, key)
	require.NoError(t, err)
	data[len(data)-1] ^= 1
	require.NoError(t, e.objects.Put(ctx, key, data))
	_, err = Open(ctx, e.objects, e.opts("w")) // the same instance claims its shard back at once
	require.ErrorContains(t, err, "is damaged", "acknowledged rows are not dropped quietly")
	require.False(t, errors.Is(err, ErrFenced))
}

// A crash at any write — a claim's, a frame's payload or header, a sync, a segment's creation, a
// seal's key file or manifest — leaves a shard that the next process opens with every
// acknowledged append, and that merges cleanly.
func TestACrashAtAnyWriteKeepsEveryAcknowledgedAppend(t *testing.T) {
	for crashAt := 0; crashAt < 48; crashAt += 3 {
		t.Run(fmt.Sprint("after ", crashAt, " writes"), func(t *testing.T) {
			ctx := context.Background()
			faulty := objstoretest.NewFaulty(objstoretest.NewMemory())
			e := newEnv(t, faulty)
			small := func(o *Options) { o.Writer.SegmentBytes = 2048 } // a new segment every few groups
			s := e.open("w", small)
			appendIDs(t, s, e.mem, 0, "before")
			faulty.CrashAfterWrites(crashAt)
			stop := make(chan struct{})
			var sealer sync.WaitGroup
			sealer.Add(1)
			go func() { // seals between groups, until the crash stops them
				defer sealer.Done()
				for s.Flush(ctx) == nil {
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()
			acked, errs := appendUntilError(t, s, e, 4, nil)
			close(stop)
			sealer.Wait()
			require.NotEmpty(t, errs, "the crash stops every appender")
			crash(s)
			faulty.Reset()

			again := e.open("w", small)
			require.NoError(t, again.Flush(ctx))
			reader := e.open("reader")
			for _, id := range append(acked, "before") {
				require.NotEqualValues(t, -1, value(t, reader, id), "acknowledged: %s", id)
			}
			for pendingGens(t, reader) > 0 {
				_, err := reader.MergeShard(ctx, s.Shard(), MergeOptions{})
				require.NoError(t, err)
			}
			for _, id := range acked {
				require.NotEqualValues(t, -1, value(t, reader, id), "merged: %s", id)
			}
			checkTable(t, reader)
		})
	}
}

// Upgrading in place: a shard whose unsealed rows are entry objects (written by a release before
// segments, or on a store that could not write in place) is replayed by a writer that writes
// segments, and both kinds of entries end up in one generation, read and merged.
func TestEntryObjectsAreReplayedAndTheShardContinuesInSegments(t *testing.T) {
	ctx := context.Background()
	e := newInPlaceEnv(t, objstoretest.NewMemory())
	before := e.open("w", withEntryObjects)
	appendIDs(t, before, e.mem, 1, "sealed-entry")
	require.NoError(t, before.Flush(ctx)) // a generation of entry objects
	appendIDs(t, before, e.mem, 2, "unsealed-entry")
	crash(before)

	after := e.open("w", withSegments)
	require.EqualValues(t, 2, value(t, after, "unsealed-entry"), "replayed from its entry object")
	appendIDs(t, after, e.mem, 3, "frame")
	require.NotEmpty(t, objectsUnder(t, e.objects, shard.SegmentPrefix(after.Shard())))
	require.NoError(t, after.Flush(ctx)) // one generation holding an entry object and a frame
	m, err := shard.ReadManifest(ctx, e.objects, after.Shard())
	require.NoError(t, err)
	require.Len(t, m.Generations, 2)
	reader := e.open("reader")
	k, err := reader.shards.KeyFile(ctx, m.Generations[1]) // decoded from the key file (another process)
	require.NoError(t, err)
	frames, objects := k.EntryKinds()
	require.True(t, frames > 0 && objects > 0, "the key file locates both kinds")

	for id, v := range map[string]int64{"sealed-entry": 1, "unsealed-entry": 2, "frame": 3} {
		require.EqualValues(t, v, value(t, reader, id), id)
	}
	for pendingGens(t, reader) > 0 {
		_, err := reader.MergeShard(ctx, after.Shard(), MergeOptions{})
		require.NoError(t, err)
	}
	for id, v := range map[string]int64{"sealed-entry": 1, "unsealed-entry": 2, "frame": 3} {
		require.EqualValues(t, v, value(t, reader, id), "merged: %s", id)
	}
	checkTable(t, reader)
}

// The same protocol on a real filesystem (pwrite, fdatasync, files that grow and are reopened).
func TestSegmentsOnALocalDisk(t *testing.T) {
	ctx := context.Background()
	local, err := objstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	e := newEnv(t, local)
	s := e.open("w", segmentBytes(64<<10))
	acked, errs := appendUntilError(t, s, e, 4, closedAfter(200*time.Millisecond))
	require.Empty(t, errs)
	require.NoError(t, s.Flush(ctx))
	more, errs := appendUntilError(t, s, e, 2, closedAfter(50*time.Millisecond))
	require.Empty(t, errs)
	crash(s) // the last appends are only in segments
	require.Greater(t, len(objectsUnder(t, local, shard.SegmentPrefix(s.Shard()))), 1, "segments rolled")

	again := e.open("w", segmentBytes(64<<10))
	require.NoError(t, again.Flush(ctx))
	reader := e.open("reader")
	for pendingGens(t, reader) > 0 {
		_, err := reader.MergeShard(ctx, s.Shard(), MergeOptions{})
		require.NoError(t, err)
	}
	for _, id := range append(acked, more...) {
		require.NotEqualValues(t, -1, value(t, reader, id), "acknowledged: %s", id)
	}
	checkTable(t, reader)
	require.Eventually(t, func() bool {
		return len(objectsUnder(t, local, shard.SegmentPrefix(s.Shard()))) == 0
	}, 2*time.Second, 10*time.Millisecond, "merged segments are deleted (the new writer has written none)")
}

func closedAfter(d time.Duration) <-chan struct{} {
	c := make(chan struct{})
	time.AfterFunc(d, func() { close(c) })
	return c
}

// A seal rolls the segment: the next append starts a new one, so once the sealed rows are merged
// their segment is deleted even though it is far below the size roll (merged WAL bytes do not
// outlive their merge).
func TestMergedWALSegmentsAreReclaimedWithoutASizeRoll(t *testing.T) {
	ctx := context.Background()
	e := newInPlaceEnv(t, objstoretest.NewMemory())
	s := e.open("w", withSegments) // 64 MiB segments: these appends never fill one
	for round := range 3 {
		appendIDs(t, s, e.mem, int64(round), ids(fmt.Sprintf("r%d-", round), 20)...)
		require.NoError(t, s.Flush(ctx))
	}
	require.Len(t, objectsUnder(t, e.objects, shard.SegmentPrefix(s.Shard())), 3, "a segment per seal")
	appendIDs(t, s, e.mem, 9, "tail")
	// Segments are retired once their last group is finished, just after the append that rolled
	// past them returns; the next seal lists every retired one. Wait until all but the active
	// segment are retired or listed.
	require.Eventually(t, func() bool {
		m, err := shard.ReadManifest(ctx, e.objects, s.Shard())
		require.NoError(t, err)
		onDisk := len(objectsUnder(t, e.objects, shard.SegmentPrefix(s.Shard())))
		return onDisk == 4 && len(m.Segments)+s.residentWriter().RetiredSegments() == onDisk-1
	}, 2*time.Second, time.Millisecond)
	require.NoError(t, s.Flush(ctx)) // seals "tail" and lists every retired segment
	merger := e.open("maintenance", func(o *Options) { o.ReadOnly = true })
	for pendingGens(t, merger) > 0 {
		_, err := merger.MergeShard(ctx, s.Shard(), MergeOptions{})
		require.NoError(t, err)
	}
	segs := objectsUnder(t, e.objects, shard.SegmentPrefix(s.Shard()))
	require.Len(t, segs, 1, "only the active segment (holding nothing unmerged) is left: %v", segs)
	for round := range 3 {
		require.EqualValues(t, round, value(t, merger, fmt.Sprintf("r%d-0000", round)))
	}
	require.EqualValues(t, 9, value(t, merger, "tail"))
}

// A seal rolls the segment only when the active one holds rows of what it sealed: when a size
// roll came between the sealed memtable's last frame and the seal's commit, the segment that roll
// started is kept, rather than closed after a single frame.
func TestASealAfterASizeRollKeepsTheSegmentThatRollStarted(t *testing.T) {
	ctx := context.Background()
	sealing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	objects := &objstoretest.WriteHooks{Store: objstoretest.NewMemory(), BeforePut: func(key string, _ []byte) func() {
		if strings.HasSuffix(key, ".keys") { // the seal's key file: hold the seal here once
			once.Do(func() { close(sealing); <-release })
		}
		return nil
	}}
	e := newInPlaceEnv(t, objects)
	s := e.open("w", segmentBytes(64<<10))
	appendPayload := func(id string, size int) {
		b := array.NewRecordBuilder(e.mem, userSchema)
		defer b.Release()
		b.Field(0).(*array.StringBuilder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(1)
		b.Field(2).(*array.StringBuilder).Append(strings.Repeat("x", size))
		rec := b.NewRecordBatch()
		defer rec.Release()
		_, err := s.Append(ctx, rec)
		require.NoError(t, err)
	}
	segments := func() int { return len(objectsUnder(t, e.objects, shard.SegmentPrefix(s.Shard()))) }

	appendPayload("a", 30<<10) // the first segment
	sealed := make(chan error, 1)
	go func() { sealed <- s.Flush(ctx) }() // seals "a"
	<-sealing
	appendPayload("b", 40<<10) // past 64 KiB with "a": a size roll starts the second segment
	require.Equal(t, 2, segments())
	close(release)
	require.NoError(t, <-sealed)
	appendPayload("c", 1<<10) // fits beside "b", which the seal did not take: no roll
	require.Equal(t, 2, segments(), "the segment holding only unsealed rows was kept")

	require.NoError(t, s.Flush(ctx)) // seals "b" and "c", which the second segment holds
	appendPayload("d", 1<<10)
	require.Equal(t, 3, segments(), "a seal of rows in the active segment rolls it")
	for id, want := range map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1} {
		require.EqualValues(t, want, value(t, s, id))
	}
}
