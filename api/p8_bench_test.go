// P8: point gets over HTTP on a merged 1M-row store against PostgreSQL primary-key SELECTs on a
// 1M-row table of the same rows, under the same load in the same run.
package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/strata-store/strata/internal/benchfmt"
)

const (
	p8Clients = 4    // concurrent clients, for both systems
	p8Gets    = 2000 // per client
)

// BenchmarkP8GetVsPostgres times random point gets by id from 4 concurrent clients: over HTTP on
// the merged store P9 scans (JSON responses, every column but the blob), and PostgreSQL SELECTs of
// the same columns by primary key on a table holding the same 1M rows.
func BenchmarkP8GetVsPostgres(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		st := newMergedStore(b, "p8")
		pool := st.cluster.pgPool(b)
		if _, err := pool.Exec(ctx, `CREATE TABLE p8_rollouts (id text PRIMARY KEY, rollout_id text NOT NULL, content text)`); err != nil {
			b.Fatal(err)
		}
		texts := p3Texts(1000)
		for start := 0; start < p9Rows; start += p9Batch {
			ids, rids, contents := make([]string, p9Batch), make([]string, p9Batch), make([]string, p9Batch)
			for i := range ids {
				row := start + i
				ids[i], rids[i], contents[i] = p9ID(row), fmt.Sprintf("t%d", row/100), texts[row%len(texts)][:p9TextBytes]
			}
			if _, err := pool.Exec(ctx, `INSERT INTO p8_rollouts SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`, ids, rids, contents); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := pool.Exec(ctx, `VACUUM ANALYZE p8_rollouts`); err != nil {
			b.Fatal(err)
		}
		// load runs p8Clients clients of p8Gets random gets each and returns every latency.
		load := func(get func(id string) error) []time.Duration {
			var mu sync.Mutex
			var all []time.Duration
			var wg sync.WaitGroup
			for c := range p8Clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(c), 8))
					times, err := benchfmt.Time(p8Gets, func(int) error { return get(p9ID(rng.IntN(p9Rows))) })
					if err != nil {
						b.Error(err)
					}
					mu.Lock()
					all = append(all, times...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			return all
		}
		httpGet := func(id string) error {
			st.drain(st.do("GET", "/api/v1/rollouts/p8/records/"+id, "", "", nil))
			return nil
		}
		pgGet := func(id string) error {
			var rid, content string
			return pool.QueryRow(ctx, `SELECT rollout_id, content FROM p8_rollouts WHERE id = $1`, id).Scan(&rid, &content)
		}
		load(httpGet) // warm both: caches, connections
		load(pgGet)
		stopAllocs := benchfmt.ProfileAllocs("p8-get.allocs.pb.gz")
		stopProfile := benchfmt.ProfileCPU("p8-get.cpu.pb.gz")
		getCPU := cpuTime()
		httpTimes := load(httpGet)
		getCPU = cpuTime() - getCPU
		stopProfile()
		stopAllocs()
		pgTimes := load(pgGet)
		hp50, hp99 := benchfmt.Percentile(httpTimes, 50), benchfmt.Percentile(httpTimes, 99)
		pp50, pp99 := benchfmt.Percentile(pgTimes, 50), benchfmt.Percentile(pgTimes, 99)
		benchfmt.Report("P8-get-p50", benchfmt.Millis(hp50), "ms", "point get over HTTP on a merged 1M-row store, 4 concurrent clients, p50")
		benchfmt.Report("P8-get-p99", benchfmt.Millis(hp99), "ms", "the same, p99")
		benchfmt.Report("P8-pg-get-p50", benchfmt.Millis(pp50), "ms", "PostgreSQL primary-key SELECT on the same 1M rows, same load, p50")
		benchfmt.Report("P8-pg-get-p99", benchfmt.Millis(pp99), "ms", "the same, p99")
		benchfmt.Report("P8-get-cpu", float64(getCPU.Microseconds())/float64(len(httpTimes)), "µs",
			"process CPU per HTTP point get (server and its in-process client; steadier than the latencies on a shared machine)")
		benchfmt.Report("P8-get-p99-vs-pg", float64(hp99)/float64(pp99), "x", "HTTP get p99 / PostgreSQL SELECT p99 (goal <= 3)")
	}
}
