package lsm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/shard"
)

// Spread over 1,000 stores, no store reaches its own seal threshold: the process-wide write buffer
// seals the largest memtables so that unsealed bytes stay within the limit, and nothing is lost.
func TestWriteBufferBoundsUnsealedBytesAcrossStores(t *testing.T) {
	const rounds, limit = 4, 1 << 20
	stores := 1000
	if raceEnabled {
		stores = 150 // still 4.8 MB through a 1 MiB buffer: it must seal to take them
	}
	reg := prometheus.NewRegistry()
	wb := shard.NewWriteBuffer(limit, 10*time.Second, reg)
	defer wb.Close()
	wb.SetMaxWait(5 * time.Minute) // the bound is under test, not how fast a loaded machine seals
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
				peak = max(peak, wb.Used())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Appends reserve their room: usage passes the stall threshold by at most one append.
	require.LessOrEqual(t, peak, int64(limit*shard.WriteBufferStall)+5*2100)
	require.Positive(t, counterValue(t, reg, "strata_wal_write_buffer_seals_total"), "the write buffer sealed memtables")
	for si, s := range all {
		for r := range rounds {
			rec, err := s.Get(context.Background(), fmt.Sprintf("s%d-r%d-3", si, r), nil)
			require.NoError(t, err)
			require.NotNil(t, rec, "store %d round %d", si, r)
			rec.Release()
		}
		require.NoError(t, s.Close(context.Background()))
	}
	require.Zero(t, wb.Used(), "closed writers hold nothing")
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

// counterValue is the value of the counter named name in reg (0 when absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
