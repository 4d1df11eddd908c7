package worker_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

// One hour of the default schedules, compressed 30x into two minutes.
const (
	p11Stores      = 100
	p11Compression = 30
	p11Run         = time.Hour / p11Compression        // appends
	p11TTL         = time.Hour / p11Compression        // --version-ttl (default 1h)
	p11Sweep       = 30 * time.Second / p11Compression // --sweep-interval (default 30s)
	p11Flush       = 30 * time.Second / p11Compression // --flush-interval (default 30s)
	p11Settle      = 2*p11TTL + 30*time.Second         // after the appends: cleanup may wait one TTL, then revisit one more
	p11RowsPerSec  = 500
	p11Rewrites    = 0.10 // share of appends that rewrite an existing id
	p11ContentSize = 400  // bytes of random text per row (about 500 B rows)
)

// BenchmarkP11StorageAmplification: 100 rollout stores take appends (10% rewrites) for an hour of
// the default schedules compressed 30x (flush and sweep every second, version TTL 2 min), with
// merges following seals, compaction and version cleanup queued by the sweep, and one worker with
// 4 slots; then the appends stop and maintenance goes on for two TTLs. Measured: bytes on storage
// (every object: table, WAL, manifests) / bytes of the live rows (the newest value of every id,
// as appended), at the end of the appends and at the end.
func BenchmarkP11StorageAmplification(b *testing.B) {
	addr := benchTemporalAddress(b)
	ctx := context.Background()
	for b.Loop() {
		dbURL, dataDir := testenv.Database(b), b.TempDir()
		cat, err := catalog.Open(ctx, dbURL)
		if err != nil {
			b.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		c, err := client.Dial(client.Options{HostPort: addr, Logger: log})
		if err != nil {
			b.Fatal(err)
		}
		mgr, names := benchStores(b, cat, c, dataDir, "p11", p11Stores)
		w := worker.New(c, &activities.Activities{Stores: mgr, Cleanup: table.CleanupOptions{OlderThan: p11TTL, Grace: p11TTL}},
			worker.Options{ActivitySlots: 4})
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		if err := worker.EnsureSweepSchedule(ctx, c, p11Sweep, workflows.SweepInput{
			StaleAfter: 5 * time.Minute / p11Compression, StatsStaleAfter: 10 * time.Minute / p11Compression,
			VersionTTL: p11TTL}.WithDefaults()); err != nil {
			b.Fatal(err)
		}

		live := map[string]map[string]int{} // store -> id -> bytes of its newest value
		var liveMu sync.Mutex               // guards live
		liveBytes := func() int64 {
			liveMu.Lock()
			defer liveMu.Unlock()
			var n int64
			for _, ids := range live {
				for _, size := range ids {
					n += int64(size)
				}
			}
			return n
		}
		runCtx, stop := context.WithTimeout(ctx, p11Run)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // appenders: batches of 10 rows to random stores at p11RowsPerSec
			defer wg.Done()
			rng := rand.New(rand.NewPCG(11, 11))
			tick := time.NewTicker(time.Second / (p11RowsPerSec / 10))
			defer tick.Stop()
			seq := 0
			for runCtx.Err() == nil {
				<-tick.C
				name := names[rng.IntN(p11Stores)]
				liveMu.Lock()
				ids, sizes := make([]string, 10), make([]int, 10)
				known := live[name]
				for i := range ids {
					if len(known) > 0 && rng.Float64() < p11Rewrites {
						for id := range known { // any existing id
							ids[i] = id
							break
						}
					} else {
						seq++
						ids[i] = fmt.Sprintf("r%08d", seq)
					}
				}
				liveMu.Unlock()
				rec := p11Batch(rng, ids, sizes)
				s, release, err := mgr.Acquire(ctx, catalog.KindRollout, name)
				if err != nil {
					b.Error(err)
					return
				}
				_, err = s.Append(ctx, rec)
				release()
				rec.Release()
				if err != nil {
					b.Error(err)
					return
				}
				liveMu.Lock()
				if live[name] == nil {
					live[name] = map[string]int{}
				}
				for i, id := range ids {
					live[name][id] = sizes[i]
				}
				liveMu.Unlock()
			}
		}()
		flushCtx, stopFlush := context.WithCancel(ctx)
		wg.Add(1)
		go func() { // the flush sweeper
			defer wg.Done()
			for flushCtx.Err() == nil {
				mgr.FlushPass(ctx, p11Flush, nil)
				time.Sleep(p11Flush)
			}
		}()
		<-runCtx.Done()
		stop()
		loaded, loadedParts := storageBytes(b, dataDir)
		logical := liveBytes()
		settleEnd := time.Now().Add(p11Settle)
		for time.Now().Before(settleEnd) {
			time.Sleep(5 * time.Second)
		}
		stopFlush()
		wg.Wait()
		settled, settledParts := storageBytes(b, dataDir)
		_ = c.ScheduleClient().GetHandle(ctx, workflows.SweepScheduleID).Delete(ctx)
		_ = mgr.Close(ctx)
		w.Stop()
		c.Close()
		cat.Close()
		benchfmt.Report("P11-storage-amplification", float64(settled)/float64(logical), "x",
			fmt.Sprintf("bytes on storage / live row bytes after 1 h of default schedules (30x compressed) on %d stores and two version TTLs of maintenance (%.1f MiB / %.1f MiB live; %s; goal <= 1.5)",
				p11Stores, float64(settled)/(1<<20), float64(logical)/(1<<20), settledParts))
		benchfmt.Report("P11-storage-amplification-loaded", float64(loaded)/float64(logical), "x",
			fmt.Sprintf("the same at the end of the appends (%.1f MiB: %s)", float64(loaded)/(1<<20), loadedParts))
	}
}

// p11Batch builds rollout rows with random text content; sizes gets each row's logical bytes.
func p11Batch(rng *rand.Rand, ids []string, sizes []int) arrow.RecordBatch {
	raw := make([]byte, p11ContentSize/2)
	contents := make([]string, len(ids))
	for r, id := range ids {
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		contents[r] = hex.EncodeToString(raw)
		sizes[r] = len(id) + len(contents[r]) + len("xx") + len("assistant") + len("text/plain") + 4 + 8
	}
	return kinds.TextRolloutBatch(memory.DefaultAllocator, ids, contents)
}

// storageBytes sums the sizes of the files under dir, and describes them by kind (the store
// directory a file lives in: data, deletions, index, _versions, _wal, _shards).
func storageBytes(b *testing.B, dir string) (int64, string) {
	var n int64
	parts := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) { // deleted while we walk
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // deleted meanwhile
		}
		n += info.Size()
		kind := "other"
		for _, k := range []string{"/data/", "/deletions/", "/index/", "/_versions/", "/_wal/", "/_shards/"} {
			if strings.Contains(path, k) {
				kind = strings.Trim(k, "/")
			}
		}
		parts[kind] += info.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var desc []string
	for _, k := range []string{"data", "deletions", "index", "_versions", "_wal", "_shards", "other"} {
		if parts[k] > 0 {
			desc = append(desc, fmt.Sprintf("%s %.1f MiB", k, float64(parts[k])/(1<<20)))
		}
	}
	return n, strings.Join(desc, ", ")
}
