package lsm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// BenchmarkP10S3Append runs A1's load (durable 1 KB single-row appends from 1, 8 and 64
// concurrent appenders) against a store on S3 (the test versitygw; WAL entry objects, one PUT per
// group commit) and against a local store in the same run: rows/s, the append latency
// distribution on S3, and the PUTs one append costs. The versitygw here answers in about a
// millisecond; the "-20ms" rows add 20 ms to every call, closer to a real S3 region, where an
// append costs two round trips (the entry's PUT, then the epoch check's LIST).
func BenchmarkP10S3Append(b *testing.B) {
	payload := strings.Repeat("y", 1000)
	ctx := context.Background()
	for b.Loop() {
		for _, c := range []struct {
			appenders, each int
			latency         time.Duration
		}{{1, 200, 0}, {8, 100, 0}, {64, 30, 0}, {8, 20, 20 * time.Millisecond}, {64, 10, 20 * time.Millisecond}} {
			s3, err := objstore.Open(ctx, testenv.S3(b))
			if err != nil {
				b.Fatal(err)
			}
			if c.latency > 0 {
				slow := objstoretest.NewFaulty(s3)
				slow.AddRule(objstoretest.Rule{Latency: c.latency})
				s3 = slow
			}
			counted := objstoretest.NewCounting(s3)
			onS3, err := Create(ctx, counted, userSchema, "id", benchOpts("writer"))
			if err != nil {
				b.Fatal(err)
			}
			local := benchStore(b, b.TempDir(), "writer")
			before := counted.Stats()
			s3Rate, lat := runAppenders(b, onS3, c.appenders, c.each, payload)
			puts := counted.Stats().Sub(before).Writes
			localRate, _ := runAppenders(b, local, c.appenders, c.each, payload)
			slices.Sort(lat)
			p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
			n, who := fmt.Sprint(c.appenders), fmt.Sprintf("%d appenders", c.appenders)
			if c.latency > 0 {
				n += fmt.Sprintf("-%dms", c.latency.Milliseconds())
				who += fmt.Sprintf(", %v added to every S3 call", c.latency)
			}
			benchfmt.Report("P10-s3-append-rows-"+n, s3Rate, "rows/s", fmt.Sprintf("durable 1 KB single-row appends to an S3 store, %s", who))
			benchfmt.Report("P10-s3-append-vs-local-"+n, s3Rate/localRate, "x", fmt.Sprintf("S3 rows/s / local-disk rows/s (%.0f), same load, same run", localRate))
			benchfmt.Report("P10-s3-append-p50-"+n, p(0.5), "ms", fmt.Sprintf("append latency on S3, %s, p50", who))
			benchfmt.Report("P10-s3-append-p99-"+n, p(0.99), "ms", fmt.Sprintf("append latency on S3, %s, p99 (the first append claims the shard)", who))
			benchfmt.Report("P10-s3-puts-per-append-"+n, float64(puts)/float64(c.appenders*c.each), "PUT", fmt.Sprintf("object writes per append on S3 (group commit), %s", who))
			_ = onS3.Close(ctx)
			_ = local.Close(ctx)
		}
	}
}

// runAppenders runs appenders goroutines, each appending each single-row batches of payload to s
// durably, and returns the rows per second and every append's latency.
func runAppenders(b *testing.B, s *Store, appenders, each int, payload string) (float64, []time.Duration) {
	ctx := context.Background()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	start := time.Now()
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rb := payloadRows(1, a*1_000_000+i, payload)
				rec := rb.NewRecordBatch()
				rb.Release()
				t0 := time.Now()
				_, err := s.Append(ctx, rec)
				d := time.Since(t0)
				rec.Release()
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return float64(appenders*each) / time.Since(start).Seconds(), lat
}
