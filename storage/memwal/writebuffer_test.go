package memwal

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// Spread over 1,000 stores, no store reaches its own seal threshold: the process-wide write buffer
// seals the largest memtables so that unsealed bytes stay within the limit, and nothing is lost.
func TestWriteBufferBoundsUnsealedBytesAcrossStores(t *testing.T) {
	const stores, rounds, limit = 1000, 4, 1 << 20
	reg := prometheus.NewRegistry()
	wb := NewWriteBuffer(limit, 10*time.Second, reg)
	defer wb.Close()
	wb.maxWait = time.Minute // the bound is under test, not how fast this machine seals
	root := objstoretest.NewMemory()
	e := newEnv(t, root)
	var all []*Store
	for i := range stores {
		objects, err := objstore.WithPrefix(root, fmt.Sprintf("store-%d", i))
		require.NoError(t, err)
		s, err := Create(context.Background(), objects, userSchema, "id", func() Options {
			o := e.opts("w")
			o.WriteBuffer = wb
			return o
		}())
		require.NoError(t, err)
		all = append(all, s)
	}
	payload := strings.Repeat("p", 2000)
	var peak int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for si, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				b := array.NewRecordBuilder(e.mem, userSchema)
				for k := range 4 {
					b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("s%d-r%d-%d", si, r, k))
					b.Field(1).(*array.Int64Builder).Append(int64(r))
					b.Field(2).(*array.StringBuilder).Append(payload)
				}
				rec := b.NewRecordBatch()
				b.Release()
				_, err := s.Append(context.Background(), rec)
				rec.Release()
				require.NoError(t, err)
				mu.Lock()
				peak = max(peak, wb.used.Load())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Appends reserve their room: usage passes the stall threshold by at most one append.
	require.LessOrEqual(t, peak, int64(limit*writeBufferStall)+5*2100)
	require.Positive(t, testutil.ToFloat64(wb.seals), "the write buffer sealed memtables")
	for si, s := range all {
		for r := range rounds {
			rec, err := s.Get(context.Background(), fmt.Sprintf("s%d-r%d-3", si, r), nil)
			require.NoError(t, err)
			require.NotNil(t, rec, "store %d round %d", si, r)
			rec.Release()
		}
		require.NoError(t, s.Close(context.Background()))
	}
	require.Zero(t, wb.used.Load(), "closed writers hold nothing")
}

// Appends wait for room, then fail with ErrOverloaded when sealing cannot make any.
func TestWriteBufferRefusesAppendsWhenItCannotMakeRoom(t *testing.T) {
	wb := NewWriteBuffer(1<<10, time.Second, nil)
	defer wb.Close()
	wb.grow(2 << 10) // bytes no writer can seal
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := wb.admit(ctx, 10)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	start := time.Now()
	_, err = wb.admit(context.Background(), 10)
	require.ErrorIs(t, err, ErrOverloaded)
	require.GreaterOrEqual(t, time.Since(start), writeBufferMaxWait-time.Second/2)
	go func() { time.Sleep(50 * time.Millisecond); wb.shrink(2 << 10) }()
	release, err := wb.admit(context.Background(), 10)
	require.NoError(t, err, "room made wakes the append")
	// A second append waits for the first's reservation only when they do not both fit.
	second, err := wb.admit(context.Background(), 10)
	require.NoError(t, err)
	second()
	release()
	big, err := wb.admit(context.Background(), 1<<20)
	require.NoError(t, err, "a lone append larger than the room left still goes")
	big()
}

// Key files and shard manifests of every store share the process's object cache, which stays
// within its bytes however many generations the stores seal; reads stay correct through evictions.
func TestStoresShareOneByteBoundedObjectCache(t *testing.T) {
	shared := cache.New(256<<10, nil)
	root := objstoretest.NewMemory()
	e := newEnv(t, root)
	var all []*Store
	for i := range 12 {
		objects, err := objstore.WithPrefix(root, fmt.Sprintf("store-%d", i))
		require.NoError(t, err)
		o := e.opts("w")
		o.Table.Cache = shared
		s, err := Create(context.Background(), objects, userSchema, "id", o)
		require.NoError(t, err)
		all = append(all, s)
	}
	for gen := range 6 {
		for si, s := range all {
			appendIDs(t, s, e.mem, int64(gen), ids(fmt.Sprintf("s%d-g%d-", si, gen), 200)...)
			require.NoError(t, s.Flush(context.Background()))
			require.LessOrEqual(t, shared.Bytes(), shared.Limit())
		}
	}
	for si, s := range all {
		for gen := range 6 {
			rec, err := s.Get(context.Background(), fmt.Sprintf("s%d-g%d-%04d", si, gen, 199), nil)
			require.NoError(t, err)
			require.NotNil(t, rec)
			require.EqualValues(t, gen, rec.Column(1).(*array.Int64).Value(0))
			rec.Release()
		}
		require.NoError(t, s.Close(context.Background()))
	}
	require.LessOrEqual(t, shared.Bytes(), shared.Limit())
}

// The object cache keeps only each shard's newest manifest: a newer version replaces the one
// before (an older one arriving late does not displace it).
func TestOnlyEachShardsNewestManifestStaysCached(t *testing.T) {
	c := newShardManifestCache(cache.New(1<<20, nil).Namespace())
	m := func(shard string) *ShardManifest { return &ShardManifest{Shard: shard} }
	c.Add(manifestKey("s1", 1), m("s1"))
	c.Add(manifestKey("s2", 1), m("s2"))
	c.Add(manifestKey("s1", 2), m("s1"))
	_, ok := c.Get(manifestKey("s1", 1))
	require.False(t, ok, "superseded")
	for _, key := range []string{manifestKey("s1", 2), manifestKey("s2", 1)} {
		_, ok := c.Get(key)
		require.True(t, ok, key)
	}
	c.Add(manifestKey("s1", 1), m("s1")) // a late reader of an old version
	_, ok = c.Get(manifestKey("s1", 2))
	require.True(t, ok, "the newest stays")
}
