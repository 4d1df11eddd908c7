package main

// The memory benchmarks, each against a `strata serve` child process whose RSS is sampled from
// /proc:
//
//	R4: peak RSS growth per payload byte of one 64 MiB upload of each body kind, and the RSS a
//	    thousand hostile requests leave behind;
//	R6: peak RSS appending to 1,000 stores (the write buffer's bound), and a soak's RSS growth
//	    with merges running, verifying every acknowledged id at the end.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/internal/testenv"
)

// childServer is a `strata serve` process for a benchmark.
type childServer struct {
	cmd  *exec.Cmd
	base string
}

func startChildServer(b *testing.B, env ...string) *childServer {
	b.Helper()
	bin := buildStrata(b)
	port, err := testenv.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	// With a profile directory the child's data is kept beside the profiles (dir/data-<port>), for
	// inspecting what a soak left behind; otherwise it goes with the benchmark.
	data := b.TempDir()
	if dir := profileDir(); dir != "" {
		data = filepath.Join(dir, fmt.Sprintf("data-%d", port))
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "STRATA_LISTEN_ADDR="+fmt.Sprintf("127.0.0.1:%d", port),
		"STRATA_DATABASE_URL="+testenv.Database(b), "STRATA_DATA_URL=file://"+data,
		"STRATA_LOG_LEVEL=error", "STRATA_PPROF=true")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &childServer{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.base + "/api/v1/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("the strata child process did not become healthy")
	return nil
}

// rss is the child's resident set size in bytes.
func (s *childServer) rss() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// settle runs a garbage collection in the child (through the profile endpoint) and lets the
// runtime return freed memory, then returns its RSS.
func (s *childServer) settle() int64 {
	if resp, err := http.Get(s.base + "/api/v1/admin/debug/pprof/heap?gc=1"); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	time.Sleep(time.Second)
	return s.rss()
}

// saveHeapProfile writes the child's heap profile to STRATA_BENCH_PROFILE_DIR/name when that is
// set (to find what holds memory: go tool pprof -top -diff_base early.pb.gz late.pb.gz).
func (s *childServer) saveHeapProfile(name string) {
	s.saveURL("/api/v1/admin/debug/pprof/heap?gc=1", name)
}

// saveMetrics writes the child's /metrics to STRATA_BENCH_PROFILE_DIR/name when that is set (the
// Go heap's and the object cache's bytes by kind, beside the heap profiles).
func (s *childServer) saveMetrics(name string) {
	s.saveURL("/metrics", name)
}

// saveSamples writes one RSS sample (bytes) per line to STRATA_BENCH_PROFILE_DIR/name when that is set.
func (s *childServer) saveSamples(name string, samples []int64) {
	if profileDir() == "" {
		return
	}
	var out bytes.Buffer
	for _, v := range samples {
		fmt.Fprintln(&out, v)
	}
	saveProfileFile(name, out.Bytes())
}

func (s *childServer) saveURL(path, name string) {
	if profileDir() == "" {
		return
	}
	resp, err := http.Get(s.base + path)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if data, err := io.ReadAll(resp.Body); err == nil {
		saveProfileFile(name, data)
	}
}

// profileDir is STRATA_BENCH_PROFILE_DIR: where the memory benchmarks leave profiles, metrics,
// RSS samples and the child's data ("" for nowhere).
func profileDir() string { return os.Getenv("STRATA_BENCH_PROFILE_DIR") }

// saveProfileFile writes data to profileDir()/name (best effort: a figure never fails for it).
func saveProfileFile(name string, data []byte) {
	_ = os.WriteFile(filepath.Join(profileDir(), name), data, 0o644)
}

// peakDuring samples the child's RSS every 5 ms while fn runs and returns the largest.
func (s *childServer) peakDuring(fn func()) int64 {
	stop := make(chan struct{})
	var peak atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak.Store(max(peak.Load(), s.rss()))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return max(peak.Load(), s.rss())
}

func (s *childServer) post(b *testing.B, path, contentType string, body []byte) int {
	b.Helper()
	resp, err := http.Post(s.base+path, contentType, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (s *childServer) createRollouts(b *testing.B, name string) {
	b.Helper()
	if code := s.post(b, "/api/v1/rollouts", "application/json", []byte(`{"name":"`+name+`"}`)); code != http.StatusCreated && code != http.StatusOK {
		b.Fatalf("create %s: %d", name, code)
	}
}

const r4Payload = 64 << 20

// r4Bodies returns the 64 MiB upload of each body kind: JSON records, multipart (metadata and one
// payload part per record) and an Arrow IPC stream, each carrying r4Payload bytes of content.
func r4Bodies() map[string][2]string {
	const rows = 16 << 10
	const size = r4Payload / rows
	rng := rand.New(rand.NewPCG(3, 4))
	text := func() string {
		b := make([]byte, size)
		for i := range b {
			b[i] = "abcdefghijklmnopqrstuvwxyz "[rng.IntN(27)]
		}
		return string(b)
	}
	out := map[string][2]string{}

	var js bytes.Buffer
	js.WriteString(`{"records":[`)
	for i := range rows {
		if i > 0 {
			js.WriteByte(',')
		}
		fmt.Fprintf(&js, `{"id":"j%06d","rollout_id":"t","content":%q}`, i, text())
	}
	js.WriteString(`]}`)
	out["json"] = [2]string{"application/json", js.String()}

	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	var meta bytes.Buffer
	meta.WriteString(`{"records":[`)
	for i := range rows {
		if i > 0 {
			meta.WriteByte(',')
		}
		fmt.Fprintf(&meta, `{"id":"m%06d","rollout_id":"t","payload_size":%d}`, i, size)
	}
	meta.WriteString(`]}`)
	fw, _ := mw.CreateFormField("metadata")
	_, _ = fw.Write(meta.Bytes())
	for i := range rows {
		fw, _ := mw.CreateFormField(strconv.Itoa(i))
		_, _ = fw.Write([]byte(text()))
	}
	_ = mw.Close()
	out["multipart"] = [2]string{mw.FormDataContentType(), mp.String()}

	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "rollout_id", Type: arrow.BinaryTypes.String}, {Name: "content", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range rows {
		rb.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("a%06d", i))
		rb.Field(1).(*array.StringBuilder).Append("t")
		rb.Field(2).(*array.StringBuilder).Append(text())
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	var ab bytes.Buffer
	w := ipc.NewWriter(&ab, ipc.WithSchema(schema))
	_ = w.Write(rec)
	_ = w.Close()
	rec.Release()
	out["arrow"] = [2]string{"application/vnd.apache.arrow.stream", ab.String()}
	return out
}

// BenchmarkR4Robustness: peak RSS growth per payload byte of a 64 MiB upload of each body kind
// (goal <= 2), and the RSS left by 1,000 hostile requests (goal <= 64 MiB).
func BenchmarkR4Robustness(b *testing.B) {
	for b.Loop() {
		bodies := r4Bodies()
		worst := 0.0
		for _, kind := range []string{"json", "multipart", "arrow"} {
			// A fresh process each: memory an earlier upload freed but the runtime kept would
			// hide this one's growth.
			s := startChildServer(b, "STRATA_MEMTABLE_MEMORY_BYTES=-1")
			s.createRollouts(b, "r4-"+kind)
			before := s.settle()
			var code int
			peak := s.peakDuring(func() {
				code = s.post(b, "/api/v1/rollouts/r4-"+kind+"/records", bodies[kind][0], []byte(bodies[kind][1]))
			})
			if code != http.StatusCreated {
				b.Fatalf("%s upload: %d", kind, code)
			}
			s.saveHeapProfile("r4-" + kind + ".heap") // where the upload's bytes went (alloc_space)
			ratio := float64(peak-before) / r4Payload
			worst = max(worst, ratio)
			benchfmt.Report("R4-rss-per-payload-"+kind, ratio, "x", "peak RSS growth / payload bytes, one 64 MiB "+kind+" upload")
		}
		benchfmt.Report("R4-rss-per-payload", worst, "x", "the largest of the three body kinds (goal <= 2)")
		clear(bodies)

		s := startChildServer(b, "STRATA_BODY_IDLE_TIMEOUT=300ms")
		s.createRollouts(b, "r4-hostile")
		before := s.settle()
		r4Hostile(b, s, 1000)
		after := s.settle()
		benchfmt.Report("R4-adversarial-rss", float64(after-before)/(1<<20), "MiB", "RSS after 1,000 hostile requests minus before (goal <= 64)")
		if resp, err := http.Get(s.base + "/api/v1/health"); err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("the server is not healthy after the hostile requests: %v", err)
		} else {
			resp.Body.Close()
		}
	}
}

// r4Hostile sends n requests cycling through the hostile classes: declared-length bombs, a 2^40
// body and an LZ4 bomb, backwards offsets, garbage, bodies that stall, unauthenticated bodies
// never sent, NUL and invalid UTF-8 where the catalog would see them, and oversized chunked bodies.
func r4Hostile(b *testing.B, s *childServer, n int) {
	addr := strings.TrimPrefix(s.base, "http://")
	arrowCT := "application/vnd.apache.arrow.stream"
	lz4Bomb := func() []byte {
		schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String}}, nil)
		bld := array.NewStringBuilder(memory.DefaultAllocator)
		bld.AppendValues([]string{"a", "b"}, nil)
		ids := bld.NewArray()
		bld.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{ids, ids}, 2)
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithLZ4())
		_ = w.Write(rec)
		_ = w.Close()
		rec.Release()
		ids.Release()
		out := buf.Bytes()
		off := 0
		for range 2 {
			off += 8 + int(binary.LittleEndian.Uint32(out[off+4:]))
		}
		binary.LittleEndian.PutUint64(out[off:], 1<<40)
		return out
	}()
	stalled := func(head string) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(conn, "%s\r\n\r\n{\"records\":", head)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			resp.Body.Close()
		}
	}
	classes := []func(){
		func() {
			s.post(b, "/api/v1/rollouts/r4-hostile/records", arrowCT, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
		},
		func() { s.post(b, "/api/v1/rollouts/r4-hostile/records", arrowCT, lz4Bomb) },
		func() { s.post(b, "/api/v1/rollouts/r4-hostile/records", arrowCT, []byte("garbage, not arrow")) },
		func() {
			stalled("POST /api/v1/rollouts/r4-hostile/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000")
		},
		func() { stalled("GET /api/v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000") },
		func() {
			s.post(b, "/api/v1/rollouts", "application/json", []byte(`{"name":"x","storage_options":{"k":"a\u0000b"}}`))
		},
		func() {
			resp, err := http.Get(s.base + "/api/v1/rollouts?cursor=%ff%00")
			if err == nil {
				resp.Body.Close()
			}
		},
		func() {
			s.post(b, "/api/v1/rollouts/r4-hostile/records", "application/json", []byte(`{"records":[null,{"id":""}]}`))
		},
		func() {
			ct := "multipart/form-data; boundary=zz"
			s.post(b, "/api/v1/rollouts/r4-hostile/records", ct, []byte("--zz\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"records\":[null]}\r\n--zz--\r\n"))
		},
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			classes[i%len(classes)]()
		}()
	}
	wg.Wait()
}

// BenchmarkR6Memory: appends spread over 1,000 stores for a minute stay within the write buffer
// (peak RSS minus the 256 MiB budget; goal <= 256 MiB), and RSS does not grow with rows written in
// a soak with merges (goal <= 1.1; STRATA_BENCH_SOAK sets its length, default 8m).
func BenchmarkR6Memory(b *testing.B) {
	for b.Loop() {
		if benchfmt.Wanted("R6-unsealed") {
			r6Unsealed(b, "")
			r6Unsealed(b, "1GiB")
		}
		if benchfmt.Wanted("R6-rss-growth") {
			r6Soak(b)
		}
	}
}

const r6Budget = 256 << 20

// r6Unsealed measures with the Go runtime's defaults (memLimit "") or with GOMEMLIMIT=memLimit,
// as a worker is deployed (the garbage collector then keeps the heap nearer what is live).
func r6Unsealed(b *testing.B, memLimit string) {
	env := []string{fmt.Sprintf("STRATA_MEMTABLE_MEMORY_BYTES=%d", r6Budget), "STRATA_FLUSH_INTERVAL=30s"}
	id, how := "R6-unsealed-rss-1000-stores", "no GOMEMLIMIT"
	if memLimit != "" {
		env = append(env, "GOMEMLIMIT="+memLimit)
		id, how = id+"-gomemlimit", "GOMEMLIMIT="+memLimit
	}
	s := startChildServer(b, env...)
	const stores = 1000
	for i := range stores {
		s.createRollouts(b, fmt.Sprintf("r6-%04d", i))
	}
	text := strings.Repeat("word ", 200) // 1 KB rows, P3's size
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rows atomic.Int64
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(45 * time.Second):
			s.saveHeapProfile("unsealed-heap-45s" + memLimit + ".pb.gz")
		}
	}()
	peak := s.peakDuring(func() {
		var wg sync.WaitGroup
		for c := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(c), 7))
				for i := 0; ctx.Err() == nil; i++ {
					var body bytes.Buffer
					body.WriteString(`{"records":[`)
					for r := range 100 {
						if r > 0 {
							body.WriteByte(',')
						}
						fmt.Fprintf(&body, `{"id":"c%d-%d-%d","rollout_id":"t","content":%q}`, c, i, r, text)
					}
					body.WriteString(`]}`)
					if s.post(b, fmt.Sprintf("/api/v1/rollouts/r6-%04d/records", rng.IntN(stores)), "application/json", body.Bytes()) == http.StatusCreated {
						rows.Add(100)
					}
				}
			}()
		}
		wg.Wait()
	})
	benchfmt.Report(id, float64(peak-r6Budget)/(1<<20), "MiB",
		fmt.Sprintf("peak RSS appending 1 KB rows to 1,000 stores for 60 s (%d rows/s, %s), minus the 256 MiB write buffer (goal <= 256)", rows.Load()/60, how))
}

func r6Soak(b *testing.B) {
	temporal := os.Getenv("STRATA_TEST_TEMPORAL_ADDRESS")
	if temporal == "" {
		b.Skip("the soak merges through Temporal (make bench starts it)")
	}
	length := 8 * time.Minute
	if v := os.Getenv("STRATA_BENCH_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		length = d
	}
	s := startChildServer(b, "GOMEMLIMIT=2GiB", "STRATA_MAINTENANCE_WORKER=true", "STRATA_TEMPORAL_ADDRESS="+temporal,
		"STRATA_SWEEP_INTERVAL=10s", "STRATA_FLUSH_INTERVAL=5s", "STRATA_INSTANCE_ID=r6-soak")
	const stores, clients, batch, rate = 50, 9, 50, 4500 // rows/s in all
	for i := range stores {
		s.createRollouts(b, fmt.Sprintf("soak-%02d", i))
	}
	text := strings.Repeat("soak ", 90) // ~500 B rows
	var mu sync.Mutex
	acked := make([]map[string]int, stores) // id -> newest step acknowledged
	for i := range acked {
		acked[i] = map[string]int{}
	}
	var samples []int64
	ctx, cancel := context.WithTimeout(context.Background(), length)
	defer cancel()
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) * batch * clients / rate)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 9))
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for step := 0; ; step++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				st := rng.IntN(stores)
				var body bytes.Buffer
				ids := make([]string, batch)
				body.WriteString(`{"records":[`)
				for r := range batch {
					ids[r] = fmt.Sprintf("c%d-%d-%d", c, step, r)
					if step > 10 && rng.IntN(10) == 0 { // a rewrite of an earlier row of this client
						ids[r] = fmt.Sprintf("c%d-%d-%d", c, rng.IntN(step), r)
					}
					if r > 0 {
						body.WriteByte(',')
					}
					fmt.Fprintf(&body, `{"id":%q,"rollout_id":"t","sequence_order":%d,"content":%q}`, ids[r], step, text)
				}
				body.WriteString(`]}`)
				if s.post(b, fmt.Sprintf("/api/v1/rollouts/soak-%02d/records", st), "application/json", body.Bytes()) != http.StatusCreated {
					continue
				}
				mu.Lock()
				for _, id := range ids {
					acked[st][id] = step
				}
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				mu.Lock()
				samples = append(samples, s.rss())
				n := len(samples)
				mu.Unlock()
				if n%60 == 0 {
					s.saveHeapProfile(fmt.Sprintf("soak-heap-%03dm.pb.gz", n/60))
					s.saveMetrics(fmt.Sprintf("soak-metrics-%03dm.txt", n/60))
				}
			}
		}
	}()
	wg.Wait()
	mean := func(from, to float64) float64 {
		lo, hi := int(from*float64(len(samples))), int(to*float64(len(samples)))
		var sum int64
		for _, v := range samples[lo:hi] {
			sum += v
		}
		return float64(sum) / float64(max(1, hi-lo))
	}
	// The 20-minute soak compares minutes 15-20 with minutes 5-10: the same quarters of any length.
	ratio := mean(0.75, 1) / mean(0.25, 0.5)
	s.saveSamples("soak-rss-per-second.txt", samples)
	benchfmt.Report("R6-rss-growth", ratio, "x", fmt.Sprintf("%s soak (50 stores, 4,500 rows/s of ~500 B, 10%% rewrites, merges on): mean RSS over the last quarter / over the second (goal <= 1.1)", length))
	benchfmt.Report("R6-rss-last-quarter", mean(0.75, 1)/(1<<20), "MiB", "mean RSS over the soak's last quarter")

	// Every acknowledged id is readable, with its newest step.
	lost, stale, total := 0, 0, 0
	for st := range stores {
		got := map[string]int{}
		cursor := ""
		for {
			resp, err := http.Get(fmt.Sprintf("%s/api/v1/rollouts/soak-%02d/records?limit=5000&cursor=%s", s.base, st, cursor))
			if err != nil {
				b.Fatal(err)
			}
			var page struct {
				Records []struct {
					ID   string `json:"id"`
					Step int    `json:"sequence_order"`
				} `json:"records"`
				Next string `json:"next_cursor"`
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range page.Records {
				got[r.ID] = r.Step
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		for id, step := range acked[st] {
			total++
			switch g, ok := got[id]; {
			case !ok:
				lost++
			case g < step:
				stale++
			}
		}
	}
	if lost > 0 || stale > 0 {
		b.Fatalf("soak: %d of %d acknowledged ids lost, %d stale", lost, total, stale)
	}
	benchfmt.Report("R6-soak-acked-ids", float64(total), "ids", "acknowledged ids verified after the soak (newest value each)")
}
