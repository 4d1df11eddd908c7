package lsm

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/internal/testrows"
	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

var (
	userSchema   = testrows.UserSchema
	checkedAlloc = testrows.CheckedAlloc
	rows         = testrows.Rows
	badOffsets   = testrows.BadOffsets
)

// env is one object store shared by several simulated processes.
type env struct {
	t       testing.TB
	objects objstore.Store
	mem     memory.Allocator
	clock   *hlc.Clock
	budget  *budget.Budget
}

func newEnv(t testing.TB, objects objstore.Store) *env {
	if testStorage != "" {
		if _, plain := objects.(*objstoretest.Memory); !plain {
			if testEntryObjects {
				return newInPlaceEnv(t, objects) // the run on entry objects runs it as it is
			}
			// A test double (faults, counting) or a store of the test's own: the run would repeat
			// the main pass's exactly.
			t.Skipf("on its own store (%T), not on %s: the main pass runs it", objects, testStorage)
		}
		remote, err := objstore.Open(context.Background(), testenv.ObjectStore(t, testStorage))
		require.NoError(t, err)
		objects = remote
	}
	return &env{t: t, objects: objects, mem: checkedAlloc(t), clock: hlc.New(nil), budget: budget.New(0, nil)}
}

// newInPlaceEnv is newEnv for tests of WAL segments, which need a store that writes in place:
// it never moves to an object store (skipping there, but in the run on entry objects).
func newInPlaceEnv(t testing.TB, objects objstore.Store) *env {
	if testStorage != "" && !testEntryObjects {
		t.Skipf("WAL segments need a store that writes in place, not %s: the main pass runs it", testStorage)
	}
	return &env{t: t, objects: objects, mem: checkedAlloc(t), clock: hlc.New(nil), budget: budget.New(0, nil)}
}

// testStorage: with STRATA_TEST_LSM_STORAGE=s3, azure or gcs, the tests that use a plain memory
// store run on that object store's test service instead (WAL entry objects: none of them writes
// in place), and the tests on stores of their own (fault injection, counting, segments) skip,
// since they would repeat the main pass — unless STRATA_TEST_WAL_LAYOUT=entries is set too, which
// runs them on WAL entry objects. `make test` runs this package once on each object store (gcs
// with -tags gcs, which links the gs:// store), the first time with entry objects everywhere.
var testStorage = os.Getenv("STRATA_TEST_LSM_STORAGE")

// testEntryObjects: with STRATA_TEST_WAL_LAYOUT=entries the tests run with WAL entry objects
// on stores that can write in place too (the layout of stores that cannot); `make test` runs
// this package both ways. Tests of one layout's own behaviour choose it themselves.
var testEntryObjects = os.Getenv("STRATA_TEST_WAL_LAYOUT") == "entries"

func (e *env) opts(instance string) Options {
	ioTimeout := 10 * time.Second
	if testStorage != "" {
		// An emulator on a loaded 2-core machine (make test runs the stores side by side) can
		// take longer than that over one tens-of-megabytes WAL entry.
		ioTimeout = 60 * time.Second
	}
	return Options{Instance: instance, Allocator: e.mem, Clock: e.clock, Budget: e.budget,
		Writer: shard.WriterOptions{GroupCommitWindow: time.Millisecond, EntryObjects: testEntryObjects}, IOTimeout: ioTimeout}
}

// withEntryObjects makes the store write WAL entry objects, whatever the store can do.
func withEntryObjects(o *Options) { o.Writer.EntryObjects = true }

// withSegments makes the store write WAL segments (the env's store must write in place).
func withSegments(o *Options) { o.Writer.EntryObjects = false }

// groupWrite matches the writes that make a group commit durable, in either layout: an entry
// object's put-if-absent (a claim's fence too) or a write into a segment (each frame is two).
func groupWrite(sh string) func(op objstoretest.Op, key string) bool {
	return func(op objstoretest.Op, key string) bool {
		return (op == objstoretest.OpPutIfAbsent && strings.HasPrefix(key, shard.EntryPrefix(sh))) ||
			(op == objstoretest.OpWriteAt && strings.HasPrefix(key, shard.SegmentPrefix(sh)))
	}
}

// walPayloads returns every WAL entry of shard that counts, by position.
func walPayloads(t testing.TB, objects objstore.Store, sh string) map[uint64][]byte {
	t.Helper()
	out, err := shard.CountedEntries(context.Background(), objects, sh)
	require.NoError(t, err)
	return out
}

// open opens (creating the table if needed) the store as process instance.
func (e *env) open(instance string, mod ...func(*Options)) *Store {
	o := e.opts(instance)
	for _, f := range mod {
		f(&o)
	}
	s, err := Create(context.Background(), e.objects, userSchema, "id", o)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func appendIDs(t testing.TB, s *Store, mem memory.Allocator, value int64, ids ...string) AppendResult {
	t.Helper()
	rec := rows(mem, ids, value)
	defer rec.Release()
	res, err := s.Append(context.Background(), rec)
	require.NoError(t, err)
	return res
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

// value reads key's value column through s (-1 when absent).
func value(t testing.TB, s *Store, key string) int64 {
	t.Helper()
	rec, err := s.Get(context.Background(), key, []string{"value"})
	require.NoError(t, err)
	if rec == nil {
		return -1
	}
	defer rec.Release()
	return rec.Column(0).(*array.Int64).Value(0)
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// recordKeys is the key file of rec (sorted by key, one row per key).
func recordKeys(rec arrow.RecordBatch, keyColumn string) *shard.KeyFile {
	keys := rec.Column(rec.Schema().FieldIndices(keyColumn)[0]).(*array.String)
	seqs := rec.Column(rec.Schema().FieldIndices(table.SeqColumn)[0]).(*array.Uint64)
	k := &shard.KeyFile{}
	for i := 0; i < keys.Len(); i++ {
		k.Keys, k.Seqs = append(k.Keys, keys.Value(i)), append(k.Seqs, seqs.Value(i))
	}
	return k
}
