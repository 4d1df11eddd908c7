package lsm

import (
	"context"
	"errors"
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

// A read whose snapshot lists a pending generation can find the generation's objects deleted by
// a merge that committed after the snapshot (in another process too). Each case blocks the
// reader on one such object until the merge has committed and deleted it, then lets it go on:
// the read must return the merged (newest) rows, neither an error nor the older rows the table
// version of its snapshot holds.
func TestReadsOvertakenByAMergeStartAgainOnAFreshSnapshot(t *testing.T) {
	keyFile := func(sh string) func(objstoretest.Op, string) bool {
		return func(op objstoretest.Op, key string) bool {
			return op == objstoretest.OpGet && strings.HasPrefix(key, shard.WALDir+sh+"/gens/")
		}
	}
	rowObject := func(sh string) func(objstoretest.Op, string) bool {
		return func(op objstoretest.Op, key string) bool {
			return (op == objstoretest.OpGetRange && strings.HasPrefix(key, shard.SegmentPrefix(sh))) ||
				(op == objstoretest.OpGet && strings.HasPrefix(key, shard.EntryPrefix(sh)))
		}
	}
	for _, tc := range []struct {
		name   string
		layout func(*Options)
		block  func(sh string) func(objstoretest.Op, string) bool
	}{
		{"key file", withSegments, keyFile},
		{"segment", withSegments, rowObject},
		{"entry object", withEntryObjects, rowObject},
	} {
		for _, read := range []string{"get", "scan"} {
			t.Run(tc.name+"/"+read, func(t *testing.T) {
				ctx := context.Background()
				e := newInPlaceEnv(t, objstoretest.NewMemory())
				// k0..k3 = 1 in the table, then = 2 in a pending generation spread over retired
				// segments (one per group commit) or entry objects.
				w := e.open("w", segmentBytes(1), tc.layout) // the layout last: segmentBytes selects segments
				keys := ids("k", 4)
				appendIDs(t, w, e.mem, 1, keys...)
				require.NoError(t, w.Flush(ctx))
				merger := e.open("maintenance", tc.layout, func(o *Options) { o.ReadOnly = true })
				_, err := merger.MergeShard(ctx, w.Shard(), MergeOptions{})
				require.NoError(t, err)
				for _, k := range keys {
					appendIDs(t, w, e.mem, 2, k)
				}
				appendIDs(t, w, e.mem, 2, "tail") // so k0..k3's segments are all retired
				if tc.name != "entry object" {    // retired once their last group is finished; the seal lists them
					require.Eventually(t, func() bool { return w.residentWriter().RetiredSegments() >= len(keys) }, 2*time.Second, time.Millisecond)
				}
				require.NoError(t, w.Flush(ctx))

				faulty := objstoretest.NewFaulty(e.objects)
				reached, release := make(chan struct{}), make(chan struct{})
				var once sync.Once
				var blocked string // the object the reader waits for; set before reached closes
				match := tc.block(w.Shard())
				faulty.AddRule(objstoretest.Rule{Times: 1, Stuck: release, Match: func(op objstoretest.Op, key string) bool {
					if !match(op, key) {
						return false
					}
					once.Do(func() { blocked = key; close(reached) })
					return true
				}})
				ro := e.opts("reader")
				tc.layout(&ro)
				ro.ReadOnly = true
				reader, err := Open(ctx, faulty, ro)
				require.NoError(t, err)
				defer reader.Close(ctx)

				type result struct {
					values map[string]int64
					err    error
				}
				done := make(chan result, 1)
				go func() {
					got := map[string]int64{}
					var err error
					if read == "get" {
						var v int64
						v, err = getValue(ctx, reader, keys[0])
						got[keys[0]] = v
					} else {
						got, err = scanValues(ctx, reader)
					}
					done <- result{got, err}
				}()
				select {
				case <-reached:
				case <-time.After(5 * time.Second):
					t.Fatal("the read never reached the blocked object")
				}
				res, err := merger.MergeShard(ctx, w.Shard(), MergeOptions{})
				require.NoError(t, err)
				require.Positive(t, res.Generations)
				require.Eventually(t, func() bool { // the merge's deletions are asynchronous
					_, err := e.objects.Stat(ctx, blocked)
					return errors.Is(err, objstore.ErrNotFound)
				}, 5*time.Second, 5*time.Millisecond, "the merge deletes the object the reader waits for")
				close(release)
				r := <-done
				require.NoError(t, r.err)
				if read == "get" {
					require.EqualValues(t, 2, r.values[keys[0]], "the merged row, not the snapshot table's older one")
				} else {
					for _, k := range append(keys, "tail") {
						require.EqualValues(t, 2, r.values[k], k)
					}
				}
			})
		}
	}
}

func getValue(ctx context.Context, s *Store, key string) (int64, error) {
	rec, err := s.Get(ctx, key, []string{"value"})
	if err != nil || rec == nil {
		return 0, err
	}
	defer rec.Release()
	return rec.Column(0).(*array.Int64).Value(0), nil
}

func scanValues(ctx context.Context, s *Store) (map[string]int64, error) {
	page, err := s.Scan(ctx, ScanOptions{Columns: []string{"id", "value"}, Limit: 100})
	if err != nil {
		return nil, err
	}
	defer page.Rows.Release()
	out := map[string]int64{}
	for i := 0; i < int(page.Rows.NumRows()); i++ {
		out[page.Rows.Column(0).(*array.String).Value(i)] = page.Rows.Column(1).(*array.Int64).Value(i)
	}
	return out, nil
}

// Merges back to back could overtake every attempt: the read then fails as overloaded (a 503
// with Retry-After over HTTP), after a bounded number of fresh snapshots.
func TestAReadOvertakenOnEveryAttemptGivesUpAsOverloaded(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("w")
	ctx := context.Background()
	merged := shard.Generation{Gen: 7} // listed in no manifest: merged, as far as anyone can tell
	attempts := 0
	_, err := readFresh(ctx, s, func() (int, error) {
		attempts++
		return 0, vanished(objstore.ErrNotFound, "some-shard", merged)
	})
	require.ErrorIs(t, err, ErrOverloaded)
	require.Equal(t, maxReadAttempts, attempts)
	_, err = readFresh(ctx, s, func() (int, error) { return 0, vanished(objstoretest.ErrInjected, "some-shard", merged) })
	require.ErrorIs(t, err, objstoretest.ErrInjected, "other errors are not retried")
	require.NotErrorIs(t, err, errVanished)
}

// A pending (unmerged) generation whose key file is gone is damage, not a race with a merge: the
// read fails at once with ErrCorrupt instead of retrying and calling the store overloaded.
func TestAMissingKeyFileOfAPendingGenerationIsCorruption(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, objstoretest.NewMemory())
	w := e.open("w")
	appendIDs(t, w, e.mem, 1, "a")
	require.NoError(t, w.Flush(ctx))
	m, err := shard.ReadManifest(ctx, e.objects, w.Shard())
	require.NoError(t, err)
	require.NoError(t, e.objects.Delete(ctx, m.Generations[0].KeysPath))
	reader := e.open("reader", func(o *Options) { o.ReadOnly = true })
	_, err = reader.Get(ctx, "a", nil)
	require.ErrorIs(t, err, ErrCorrupt)
	require.NotErrorIs(t, err, ErrOverloaded)
	_, err = reader.Scan(ctx, ScanOptions{})
	require.ErrorIs(t, err, ErrCorrupt)
}
