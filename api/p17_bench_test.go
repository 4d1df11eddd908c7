// P17: the change feed and read tokens, over HTTP against workers in this process (each with its
// own instance id, so its own shard): how long after an append's ack (?flush=true, on one worker)
// a consumer long-polling on another worker has the row; how fast a consumer catching up reads a
// merged 1M-row store's retained generations against the P9 Arrow scan of the same store; how
// long a read token over 1,000 stores takes; and how much storage one consumer that never
// commits costs while the retention bound holds its rows.
package api_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/table"
)

func BenchmarkP17ChangeFeed(b *testing.B) {
	if !benchfmt.Wanted("P17") {
		b.Skip("P17 not selected")
	}
	for b.Loop() {
		c := benchCluster(b)
		inner := &cluster{t: b, cat: c.cat, dataDir: c.data, mem: memory.DefaultAllocator, capacity: 2000}
		w1 := newMergedStoreServer(b, inner.worker("p17-w1"))
		w2 := newMergedStoreServer(b, inner.worker("p17-w2"))
		p17Latency(b, w1, w2)
		p17CatchUp(b, w1)
		p17Snapshots(b, w1)
		p17LaggingConsumer(b, inner, c.data)
	}
}

// p17Latency: a consumer on w2 waits (wait=10s) from the feed's end; w1 appends one record with
// ?flush=true; the time from w1's answer to w2's is the delivery latency.
func p17Latency(b *testing.B, w1, w2 *mergedStore) {
	w1.drain(w1.do("POST", "/api/v1/rollouts", "application/json", "", []byte(`{"name":"p17"}`)))
	cursor := feedCursor(b, w2, "/api/v1/rollouts/p17/changes")
	const n = 200
	rng := rand.New(rand.NewPCG(17, 17))
	var lat []time.Duration
	for i := range n {
		got := make(chan time.Time, 1)
		go func(cur string) {
			resp := w2.do("GET", "/api/v1/rollouts/p17/changes?wait=10s&cursor="+url.QueryEscape(cur), "", "", nil)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `"_op":"upsert"`) {
				b.Errorf("the long poll returned no row: %s", body)
			}
			cursor = resp.Header.Get(api.HeaderFeedCursor) // read after got: the loop waits for it
			got <- time.Now()
		}(cursor)
		// The poll is waiting; the append lands at a random moment of its wait.
		time.Sleep(5*time.Millisecond + time.Duration(rng.IntN(40))*time.Millisecond)
		body := fmt.Sprintf(`{"records":[{"id":"l%04d","rollout_id":"t","content":"x"}]}`, i)
		resp := w1.do("POST", "/api/v1/rollouts/p17/records?flush=true", "application/json", "", []byte(body))
		acked := time.Now() // the answer's headers: the ack (the consumer may have the row already)
		w1.drain(resp)
		lat = append(lat, max((<-got).Sub(acked), 0))
	}
	benchfmt.Report("P17-feed-latency-p50", benchfmt.Millis(benchfmt.Percentile(lat, 50)), "ms", "append ack (?flush=true, worker 1) to its delivery to a consumer long-polling on worker 2")
	benchfmt.Report("P17-feed-latency-p99", benchfmt.Millis(benchfmt.Percentile(lat, 99)), "ms", "the same, p99 of 200 (goal <= 50; the poll woken by the seal's notification, --feed-poll-interval 250ms the fallback; a row seen before the ack counts 0)")
}

// feedCursor is the cursor a JSON-lines changes answer ends with.
func feedCursor(b *testing.B, w *mergedStore, path string) string {
	resp := w.do("GET", path, "", "", nil)
	defer w.drain(resp)
	return resp.Header.Get(api.HeaderFeedCursor)
}

// p17CatchUp: 1M rows of ~600 B appended in 100 sealed batches while a consumer (registered
// before them) reads nothing, then merged and indexed; the consumer then reads the whole feed
// (retained generations) as Arrow batches of 10,000, and the store is scanned as P9 does.
func p17CatchUp(b *testing.B, w *mergedStore) {
	w.drain(w.do("POST", "/api/v1/rollouts", "application/json", "", []byte(`{"name":"p17scan"}`)))
	w.drain(w.do("POST", "/api/v1/rollouts/p17scan/consumers", "application/json", "", []byte(`{"name":"late"}`)))
	texts := p3Texts(1000)
	for batch := range p9Rows / p9Batch {
		w.drain(w.do("POST", "/api/v1/rollouts/p17scan/records?flush=true", "application/vnd.apache.arrow.stream", "", p9Body(batch, texts)))
	}
	mergeAndIndex(b, w.worker, "p17scan")
	readArrow := func(path string, header string) (rows int, next string) {
		resp := w.do("GET", path, "", "application/vnd.apache.arrow.stream", nil)
		defer w.drain(resp)
		rd, err := ipc.NewReader(resp.Body, ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			b.Fatal(err)
		}
		defer rd.Release()
		for rd.Next() {
			rows += int(rd.RecordBatch().NumRows())
		}
		if rd.Err() != nil {
			b.Fatal(rd.Err())
		}
		if header == "" {
			next, _ = rd.Schema().Metadata().GetValue(api.FeedCursorMetadata)
		} else {
			next = resp.Header.Get(header)
		}
		return rows, next
	}
	start, rows, cursor := time.Now(), 0, ""
	for {
		q := "consumer=late"
		if cursor != "" {
			q = "cursor=" + url.QueryEscape(cursor)
		}
		n, next := readArrow("/api/v1/rollouts/p17scan/changes?format=arrow&limit="+strconv.Itoa(p9Batch)+"&"+q, "")
		rows += n
		cursor = next
		if n == 0 {
			break
		}
	}
	feedTime := time.Since(start)
	if rows != p9Rows {
		b.Fatalf("the catching-up consumer read %d rows, want %d", rows, p9Rows)
	}
	scan := func() time.Duration {
		start, rows, cursor := time.Now(), 0, ""
		for {
			n, next := readArrow("/api/v1/rollouts/p17scan/records?limit="+strconv.Itoa(p9Batch)+"&cursor="+url.QueryEscape(cursor), "X-Next-Cursor")
			rows += n
			if cursor = next; cursor == "" {
				break
			}
		}
		if rows != p9Rows {
			b.Fatalf("the scan read %d rows, want %d", rows, p9Rows)
		}
		return time.Since(start)
	}
	scan() // the first scan after the build grows the heap (see P9)
	scanTime := scan()
	rate := func(d time.Duration) float64 { return p9Rows / d.Seconds() }
	benchfmt.Report("P17-feed-catch-up-rows", rate(feedTime), "rows/s", "a consumer 1M rows behind (100 generations, merged and retained) reading the feed as Arrow batches of 10,000")
	benchfmt.Report("P17-scan-arrow-rows", rate(scanTime), "rows/s", "the P9 Arrow scan of the same merged store, pages of 10,000")
	benchfmt.Report("P17-feed-rows-vs-scan", scanTime.Seconds()/feedTime.Seconds(), "x", "catching-up consumer rows/s / P9 Arrow scan rows/s (goal >= 0.5)")
}

// p17Snapshots: a read token over 1,000 generic stores (each with a row in its WAL), 30 times.
func p17Snapshots(b *testing.B, w *mergedStore) {
	const stores = 1000
	var names []string
	for i := range stores {
		name := fmt.Sprintf("p17s%04d", i)
		w.drain(w.do("POST", "/api/v1/generic", "application/json", "", []byte(`{"name":"`+name+`","schema":{"columns":[["id","string"]]}}`)))
		w.drain(w.do("POST", "/api/v1/generic/"+name+"/rows?flush=true", "application/json", "", []byte(`{"rows":[{"id":"a"}]}`)))
		names = append(names, `"generic/`+name+`"`)
	}
	body := []byte(`{"stores":[` + strings.Join(names, ",") + `],"ttl":"1h"}`)
	samples, err := benchfmt.Time(30, func(int) error {
		w.drain(w.do("POST", "/api/v1/snapshots", "application/json", "", body))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	benchfmt.Report("P17-snapshot-create-p50", benchfmt.Millis(benchfmt.Percentile(samples, 50)), "ms", "POST /api/v1/snapshots over 1,000 stores (each store's cut, one catalog transaction)")
	benchfmt.Report("P17-snapshot-create-p99", benchfmt.Millis(benchfmt.Percentile(samples, 99)), "ms", "the same, p99 of 30 (goal <= 100)")
}

// p17LaggingConsumer: a store under a steady load (batches of new and updated rows, sealed,
// merged every third batch, cleaned up every tenth) on a worker whose --feed-retention is a fifth
// of the run: the run stands for ten hours of load with a two-hour retention. One consumer reads
// and commits an hour behind (it commits the feed's end as it was an hour before); another stops
// committing at the start. Amplification is the store's bytes on disk at the end over its bytes
// once the consumers are gone (released, cleaned up).
func p17LaggingConsumer(b *testing.B, inner *cluster, dataDir string) {
	const rounds, rowsPerRound = 100, 2000
	hour := 2 * time.Second
	lagging := *inner
	lagging.retainFor = 2 * hour
	w := newMergedStoreServer(b, lagging.worker("p17-lag"))
	texts := p3Texts(1000) // ~500 B of word-like text: it compresses as prose does
	// run returns the store's bytes on disk with the consumer, without it (released, cleaned up),
	// and the bytes of its live rows' values.
	run := func(name string, behind bool) (held, base, live float64) {
		liveRows := map[int]int{}
		w.drain(w.do("POST", "/api/v1/generic", "application/json", "", []byte(`{"name":"`+name+`","schema":{"columns":[["id","string"],["step","int64"],["text","string"]]}}`)))
		w.drain(w.do("POST", "/api/v1/generic/"+name+"/consumers", "application/json", "", []byte(`{"name":"c"}`)))
		roundTime := 10 * hour / rounds
		lagRounds := rounds / 10
		var heads []string
		for r := range rounds {
			var rows []string
			for i := range rowsPerRound {
				id := r*rowsPerRound*4/5 + i // a fifth of each round updates the previous round's rows
				text := texts[(r+i)%len(texts)]
				rows = append(rows, fmt.Sprintf(`{"id":"k%09d","step":%d,"text":"%s"}`, id, r, text))
				liveRows[id] = 10 + 8 + len(text)
			}
			w.drain(w.do("POST", "/api/v1/generic/"+name+"/rows?flush=true", "application/json", "", []byte(`{"rows":[`+strings.Join(rows, ",")+`]}`)))
			heads = append(heads, feedCursor(b, w, "/api/v1/generic/"+name+"/changes"))
			if behind && r >= lagRounds {
				body := `{"cursor":"` + heads[r-lagRounds] + `"}`
				w.drain(w.do("POST", "/api/v1/generic/"+name+"/consumers/c/commit", "application/json", "", []byte(body)))
			}
			if r%3 == 2 {
				w.drain(w.do("POST", "/api/v1/generic/"+name+"/merge-wal", "", "", nil))
			}
			if r%10 == 9 {
				p17Cleanup(b, w, name)
			}
			time.Sleep(roundTime)
		}
		held = float64(dirBytes(b, dataDir, name))
		w.drain(w.do("DELETE", "/api/v1/generic/"+name+"/consumers/c", "", "", nil))
		p17Cleanup(b, w, name)
		for _, n := range liveRows {
			live += float64(n)
		}
		return held, float64(dirBytes(b, dataDir, name)), live
	}
	held, base, live := run("p17lag", true)
	benchfmt.Report("P17-lagging-consumer-amplification", held/live, "x",
		fmt.Sprintf("bytes on disk / live row bytes with a consumer committing an hour behind, %d rounds of %d rows (a fifth rewrites) standing for 10 hours, retention 2 hours (goal <= 2.5)", rounds, rowsPerRound))
	benchfmt.Report("P17-lagging-consumer-added", held/base, "x", "bytes on disk with that consumer / without it (what the consumer costs)")
	benchfmt.Report("P17-no-consumer-amplification", base/live, "x", "bytes on disk / live row bytes without a consumer, after the same cleanup")
	held, base, _ = run("p17stuck", false)
	benchfmt.Report("P17-stuck-consumer-added", held/base, "x",
		"bytes with a consumer that stopped committing at the start / without it: past --feed-retention it holds nothing")
}

// tableCleanupNow expires every version but the latest and every unreferenced file.
var tableCleanupNow = table.CleanupOptions{OlderThan: time.Nanosecond, Grace: time.Nanosecond}

// p17Cleanup runs the store's version cleanup and release with every old version expired.
func p17Cleanup(b *testing.B, w *mergedStore, name string) {
	s, release, err := w.worker.mgr.Acquire(context.Background(), "generic", name)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	if _, err := s.CleanupVersions(context.Background(), tableCleanupNow); err != nil {
		b.Fatal(err)
	}
	if _, err := s.ReleaseRetained(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// dirBytes is the size of the files of the store directories whose name starts with name.
func dirBytes(b *testing.B, dataDir, name string) int64 {
	var total int64
	matches, _ := filepath.Glob(filepath.Join(dataDir, "generic", name+".*"))
	for _, m := range matches {
		_ = filepath.Walk(m, func(_ string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				total += info.Size()
			}
			return nil
		})
	}
	if total == 0 {
		b.Fatalf("no store directory %s.* under %s", name, dataDir)
	}
	return total
}
