// P7: durable appends of large Arrow IPC batches over HTTP against what the disk under the WAL
// writes with direct, synced I/O (dd), on the same filesystem in the same run.
package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/internal/benchfmt"
)

// p7Clients append concurrently (each request waits for its acknowledgement).
const p7Clients = 4

// BenchmarkP7AppendVsDisk appends Arrow IPC bodies of 8, 32 and 64 MB (rollout rows with 4 KB of
// text) to one store from p7Clients clients, each request acknowledged durable, and compares the
// MB/s with `dd oflag=direct conv=fdatasync` writing as many bytes to the same directory. The
// worker has `strata serve`'s default request-memory budget.
func BenchmarkP7AppendVsDisk(b *testing.B) {
	for b.Loop() {
		c := benchCluster(b)
		w := c.benchWorker(b, func(d *api.Deps) { d.MaxInflightRequestBytes = 2 << 30 })
		srv := httptest.NewServer(w.e)
		defer srv.Close()
		client := &http.Client{}
		post := func(path, ct string, body []byte) {
			resp, err := client.Post(srv.URL+path, ct, bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				b.Fatalf("POST %s: %d %s", path, resp.StatusCode, msg)
			}
		}
		post("/api/v1/rollouts", "application/json", []byte(`{"name":"p7"}`))
		texts := p3Texts(64)
		row := 0
		for _, mb := range []int{8, 32, 64} {
			const total = 256 << 20 // bytes appended per body size
			bodies := make([][]byte, 0, total/(mb<<20))
			for range total / (mb << 20) {
				bodies = append(bodies, p7Body(mb<<20, &row, texts))
			}
			var sent atomic.Int64
			stopProfile := benchfmt.ProfileCPU(fmt.Sprintf("p7-append-%dmb.cpu.pb.gz", mb))
			start := time.Now()
			var wg sync.WaitGroup
			next := make(chan []byte)
			for range p7Clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for body := range next {
						post("/api/v1/rollouts/p7/records", "application/vnd.apache.arrow.stream", body)
						sent.Add(int64(len(body)))
					}
				}()
			}
			for _, body := range bodies {
				next <- body
			}
			close(next)
			wg.Wait()
			appendRate := float64(sent.Load()) / time.Since(start).Seconds() / 1e6
			stopProfile()
			diskRate := p7DiskRate(b, c.data, mb, int(sent.Load()/(int64(mb)<<20)))
			benchfmt.Report(fmt.Sprintf("P7-append-mbps-%dmb", mb), appendRate, "MB/s", fmt.Sprintf("durable Arrow IPC appends of %d MB bodies over HTTP, 4 clients", mb))
			benchfmt.Report(fmt.Sprintf("P7-disk-mbps-%dmb", mb), diskRate, "MB/s", fmt.Sprintf("dd oflag=direct conv=fdatasync, bs=%dM, as many bytes, same directory", mb))
			benchfmt.Report(fmt.Sprintf("P7-append-vs-disk-%dmb", mb), appendRate/diskRate, "x", "append MB/s / dd MB/s (goal >= 0.5)")
		}
	}
}

// p7Body is an Arrow IPC stream of about size bytes of rollout rows (id, rollout_id, 4 KB of
// text), ids continuing from *row.
func p7Body(size int, row *int, texts []string) []byte {
	text := strings.Repeat(texts[0], 4)
	first, n := *row, size/(len(text)+32)+1
	*row += n
	return rolloutIPCBody(n, func(i int) (string, string, string) {
		return fmt.Sprintf("p7-%09d", first+i), fmt.Sprintf("t%d", (first+i)/100), text
	})
}

// p7DiskRate runs dd writing count blocks of mb MiB with direct I/O and a final fdatasync into
// dir, and returns MB/s as timed here.
func p7DiskRate(b *testing.B, dir string, mb, count int) float64 {
	out := filepath.Join(dir, "p7-dd.bin")
	defer os.Remove(out)
	start := time.Now()
	cmd := exec.Command("dd", "if=/dev/zero", "of="+out, fmt.Sprintf("bs=%dM", mb), fmt.Sprintf("count=%d", count), "oflag=direct", "conv=fdatasync")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("dd: %v: %s", err, msg)
	}
	return float64(int64(count)*int64(mb)<<20) / time.Since(start).Seconds() / 1e6
}
