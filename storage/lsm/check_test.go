package lsm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
)

// The WAL invariant checker finds what would break reads or replay: a generation's missing key
// file, a listed segment cut short, a missing WAL entry a generation points into.
func TestTheWALCheckerFindsBrokenInvariants(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		layout   func(*Options)
		segments bool
		damage   func(t *testing.T, e *env, sh string, m *shard.ShardManifest)
	}{
		{"missing key file", withSegments, true, func(t *testing.T, e *env, _ string, m *shard.ShardManifest) {
			require.NoError(t, e.objects.Delete(ctx, m.Generations[0].KeysPath))
		}},
		{"listed segment cut short", withSegments, true, func(t *testing.T, e *env, sh string, m *shard.ShardManifest) {
			ref := m.Segments[0]
			data, err := e.objects.Get(ctx, shard.SegmentKey(sh, ref.Name))
			require.NoError(t, err)
			require.NoError(t, e.objects.Put(ctx, shard.SegmentKey(sh, ref.Name), data[:ref.Length/2]))
		}},
		{"missing entry object", withEntryObjects, false, func(t *testing.T, e *env, sh string, m *shard.ShardManifest) {
			require.NoError(t, e.objects.Delete(ctx, shard.EntryKey(sh, m.Generations[0].LastEntry)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newInPlaceEnv(t, objstoretest.NewMemory())
			s := e.open("w", segmentBytes(1), tc.layout) // the layout last: segmentBytes selects segments
			appendIDs(t, s, e.mem, 1, "a", "b")
			appendIDs(t, s, e.mem, 2, "c")
			appendIDs(t, s, e.mem, 3, "d") // so the segments before are retired and listed
			if tc.segments {               // a segment is retired once its last group is finished, just after the append returns
				w := s.residentWriter()
				require.Eventually(t, func() bool { return w.RetiredSegments() >= 2 }, 2*time.Second, time.Millisecond)
			}
			require.NoError(t, s.Flush(ctx))
			require.NoError(t, shard.Check(ctx, e.objects, s.Shard()))
			m, err := shard.ReadManifest(ctx, e.objects, s.Shard())
			require.NoError(t, err)
			tc.damage(t, e, s.Shard(), m)
			require.Error(t, shard.Check(ctx, e.objects, s.Shard()))
		})
	}
}
