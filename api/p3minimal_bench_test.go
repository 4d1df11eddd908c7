// P3's minimal servers: what a durable server with no work but group commit does with P3's load
// on this machine. A minimal HTTP server reads each body, gathers the bodies that queue meanwhile
// into a group (the MemWAL writer's 2 ms window and two groups in flight) and makes the group
// durable before answering — no Arrow decoding, no catalog, no memtable. The MemWAL's two ways to
// make a group durable are measured: "log" appends every group to one file through the object
// store's in-place writer and syncs it (fdatasync), as the MemWAL's segments do; "entries" makes
// each group one object (objstore.Local.PutIfAbsent: temp file, fsync, link, directory fsync), the
// MemWAL's layout on stores that cannot write in place. Their ratios to PostgreSQL show what each
// durability protocol allows here, whatever the server does besides.
package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-store/strata/storage/objstore"
)

// minimalServer answers every POST once its body is durable through write, which is called with
// a group's concatenated bodies and the group's sequence number (from 1). stop closes the server
// and ends its committer.
func minimalServer(write func(seq int, data []byte) error) (srv *httptest.Server, stop func()) {
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

// p3Minimal is the two minimal servers, one per way of making a group durable.
type p3Minimal struct {
	entriesURL, logURL string
	stop               func()
}

// startP3Minimal starts both minimal servers with their data under dir.
func startP3Minimal(b *testing.B, dir string) *p3Minimal {
	local, err := objstore.NewLocal(filepath.Join(dir, "minimal-entries"))
	if err != nil {
		b.Fatal(err)
	}
	entries, stopEntries := minimalServer(func(seq int, data []byte) error {
		return local.PutIfAbsent(b.Context(), fmt.Sprintf("entries/%020d.arrows", seq), data)
	})

	logStore, err := objstore.NewLocal(filepath.Join(dir, "minimal-log"))
	if err != nil {
		b.Fatal(err)
	}
	if err := logStore.PutIfAbsent(b.Context(), "segment.wal", nil); err != nil {
		b.Fatal(err)
	}
	f, err := logStore.OpenWriter(b.Context(), "segment.wal", objstore.WriterOptions{Direct: true})
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu  sync.Mutex // guards end
		end int64
	)
	log, stopLog := minimalServer(func(_ int, data []byte) error {
		mu.Lock()
		off := end
		end += int64(len(data))
		mu.Unlock()
		if err := f.WriteAt(b.Context(), data, off); err != nil {
			return err
		}
		return f.Sync(b.Context())
	})
	return &p3Minimal{entriesURL: entries.URL, logURL: log.URL, stop: func() {
		stopEntries()
		stopLog()
		f.Close()
	}}
}
