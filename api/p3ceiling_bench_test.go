// The P3 ceiling: the most a durable server could do with P3's load on this machine. A minimal
// HTTP server reads each body, gathers the bodies that queue meanwhile into a group (the MemWAL
// writer's 2 ms window and two groups in flight) and makes the group durable before answering —
// no Arrow decoding, no catalog, no memtable. Two ways to make a group durable are measured:
// "entries" is the MemWAL's protocol (one object per group, objstore.Local.PutIfAbsent: temp
// file, fsync, link, directory fsync); "log" appends every group to one file and fsyncs it (what
// a segment-file WAL would do). Their ratio to PostgreSQL bounds what P3 can show here.
package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-store/strata/storage/objstore"
)

// ceilingServer answers every POST once its body is durable through write, which is called with
// a group's concatenated bodies and the group's sequence number (from 1). stop closes the server
// and ends its committer.
func ceilingServer(write func(seq int, data []byte) error) (srv *httptest.Server, stop func()) {
	type pending struct {
		body []byte
		done chan error
	}
	var (
		mu    sync.Mutex // guards queue
		queue []*pending
	)
	wake := make(chan struct{}, 1)
	go func() {
		slots := make(chan struct{}, 2)
		seq, last := 0, 1
		for range wake {
			for {
				slots <- struct{}{}
				for deadline := time.Now().Add(2 * time.Millisecond); time.Now().Before(deadline); time.Sleep(250 * time.Microsecond) {
					mu.Lock()
					n := len(queue)
					mu.Unlock()
					if n >= last {
						break
					}
				}
				mu.Lock()
				group := queue
				queue = nil
				mu.Unlock()
				if len(group) == 0 {
					<-slots
					break
				}
				seq, last = seq+1, len(group)
				var data []byte
				for _, p := range group {
					data = append(data, p.body...)
				}
				go func(seq int) {
					err := write(seq, data)
					<-slots
					for _, p := range group {
						p.done <- err
					}
				}(seq)
			}
		}
	}()
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p := &pending{body: body, done: make(chan error, 1)}
		mu.Lock()
		queue = append(queue, p)
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
		if err := <-p.done; err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"version":1,"count":100}`))
	}))
	return srv, func() {
		srv.Close() // waits for every request, so nothing wakes the committer afterwards
		close(wake)
	}
}

// p3Ceilings runs P3's load (run, with post sending the body of client cl's batch bt) against
// the ceiling server, once per way of making a group durable, and returns their rows/s.
func p3Ceilings(b *testing.B, dir string, run func(work func(client, batch int)) float64, post func(url string, cl, bt int)) (entries, log float64) {
	measure := func(write func(seq int, data []byte) error) float64 {
		srv, stop := ceilingServer(write)
		defer stop()
		return run(func(cl, bt int) { post(srv.URL, cl, bt) })
	}
	local, err := objstore.NewLocal(filepath.Join(dir, "ceiling-entries"))
	if err != nil {
		b.Fatal(err)
	}
	entries = measure(func(seq int, data []byte) error {
		return local.PutIfAbsent(b.Context(), fmt.Sprintf("entries/%020d.arrows", seq), data)
	})

	f, err := os.OpenFile(filepath.Join(dir, "ceiling.log"), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var (
		mu  sync.Mutex // guards end
		end int64
	)
	log = measure(func(_ int, data []byte) error {
		mu.Lock()
		off := end
		end += int64(len(data))
		mu.Unlock()
		if _, err := f.WriteAt(data, off); err != nil {
			return err
		}
		return f.Sync()
	})
	return entries, log
}
