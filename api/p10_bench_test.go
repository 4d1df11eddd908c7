package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
)

// BenchmarkP10ObjectStoreHTTP is P3's Arrow IPC load (16 clients, batches of 100 1 KB rows,
// durable when answered) against one API worker whose stores are on an object store's test
// service (S3 on versitygw, Azure Blob on Azurite, GCS on fake-gcs-server) and one whose stores
// are on the local disk, taking turns in the same run: rows/s of each and the request latency on
// the object store, for each object store.
func BenchmarkP10ObjectStoreHTTP(b *testing.B) {
	for b.Loop() {
		for _, kind := range testenv.ObjectStoreKinds {
			benchObjectStoreHTTP(b, kind)
		}
	}
}

func benchObjectStoreHTTP(b *testing.B, kind string) {
	const clients, batches, rounds, batchRows = 16, 40, 2, p3Batch
	{
		c := benchCluster(b)
		local := c.benchWorker(b)
		remote := (&benchClusterT{cat: c.cat, url: c.url, data: testenv.ObjectStore(b, kind)}).benchWorker(b)
		bodies := make([][]byte, clients*batches)
		for cl := range clients {
			for bt := range batches {
				bodies[cl*batches+bt] = p3ArrowBody(cl, bt)
			}
		}
		type target struct {
			name    string // each worker its own store: they share the catalog
			srv     *httptest.Server
			elapsed time.Duration
			lat     []time.Duration
		}
		targets := []*target{{name: "p10-local-" + kind, srv: httptest.NewServer(local.e)}, {name: "p10-" + kind, srv: httptest.NewServer(remote.e)}}
		httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
		post := func(url, ct string, data []byte) time.Duration {
			start := time.Now()
			resp, err := httpc.Post(url, ct, bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Fatalf("POST %s: %d", url, resp.StatusCode)
			}
			return time.Since(start)
		}
		for _, t := range targets {
			defer t.srv.Close()
			post(t.srv.URL+"/api/v1/rollouts", "application/json", []byte(fmt.Sprintf(`{"name": %q}`, t.name)))
		}
		per := batches / rounds
		for round := range rounds {
			for _, t := range targets {
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := time.Now()
				for cl := range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for bt := round * per; bt < (round+1)*per; bt++ {
							d := post(t.srv.URL+"/api/v1/rollouts/"+t.name+"/records", "application/vnd.apache.arrow.stream", bodies[cl*batches+bt])
							mu.Lock()
							t.lat = append(t.lat, d)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				t.elapsed += time.Since(start)
			}
		}
		rows := float64(clients * batches * batchRows)
		localRate, remoteRate := rows/targets[0].elapsed.Seconds(), rows/targets[1].elapsed.Seconds()
		slices.Sort(targets[1].lat)
		id := func(name string) string { return "P10-" + kind + "-" + name }
		benchfmt.Report(id("http-arrow-rows"), remoteRate, "rows/s", "P3's Arrow IPC append load over HTTP, stores on "+kind)
		benchfmt.Report(id("arrow-vs-local"), remoteRate/localRate, "x", fmt.Sprintf("%s rows/s / local-disk rows/s (%.0f), same run, turns taken", kind, localRate))
		benchfmt.Report(id("http-append-p99"), benchfmt.Millis(benchfmt.Percentile(targets[1].lat, 99)), "ms", "append request latency over HTTP, stores on "+kind+", p99")
	}
}
