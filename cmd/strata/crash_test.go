package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
)

// startCrashServe starts a `strata serve` child process on a local disk with its instance id and
// flush interval, and returns it (to kill and start again) and its base URL.
func startCrashServe(t *testing.T, instance, flushInterval string) (*clusterProcess, string) {
	port, err := testenv.FreePort()
	require.NoError(t, err)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p := &clusterProcess{t: t, args: []string{"serve"}, dir: t.TempDir(),
		env: []string{"STRATA_DATABASE_URL=" + testenv.Database(t), "STRATA_DATA_URL=file://" + t.TempDir(),
			"STRATA_INSTANCE_ID=" + instance, fmt.Sprintf("STRATA_LISTEN_ADDR=127.0.0.1:%d", port),
			"STRATA_FLUSH_INTERVAL=" + flushInterval, "STRATA_LOG_LEVEL=warn"}}
	p.start()
	t.Cleanup(p.stop) // whichever run is the last (stopping one that has exited does nothing)
	waitHealthy(t, base)
	return p, base
}

// A `strata serve` process on a local disk is killed (-9) while three clients append large
// batches (about 3 MB each, so their frames' whole blocks are written with O_DIRECT); restarted
// with its instance id, it answers every acknowledged row with the content that was sent.
func TestAKill9DuringLargeAppendsLosesNoAcknowledgedRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	p, base := startCrashServe(t, "crash-1", "1h")
	resp, err := http.Post(base+"/api/v1/rollouts", "application/json", strings.NewReader(`{"name":"crash"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	// content is a row's text: 192 KiB that only its id produces.
	content := func(id string) string { return strings.Repeat(id+"|", (192<<10)/(len(id)+1)) }
	var (
		mu    sync.Mutex
		acked []string
	)
	enough := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := 0; ; batch++ {
				select {
				case <-stop:
					return
				default:
				}
				var records []map[string]string
				var ids []string
				for r := range 16 {
					id := fmt.Sprintf("c%d-b%04d-r%02d", c, batch, r)
					ids = append(ids, id)
					records = append(records, map[string]string{"id": id, "rollout_id": "crash", "content": content(id)})
				}
				body, _ := json.Marshal(map[string]any{"records": records})
				resp, err := http.Post(base+"/api/v1/rollouts/crash/records", "application/json", bytes.NewReader(body))
				if err != nil {
					return // the server is gone: this batch was not acknowledged
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					return
				}
				mu.Lock()
				acked = append(acked, ids...)
				if len(acked) == 16*12 {
					close(enough)
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(2 * time.Minute):
		t.Fatal("the appends did not get far enough")
	}
	p.kill9() // while the clients are still appending
	close(stop)
	wg.Wait()

	p.start()
	waitHealthy(t, base)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range acked {
		resp, err := http.Get(base + "/api/v1/rollouts/crash/records/" + url.PathEscape(id))
		require.NoError(t, err)
		var got struct {
			Record *struct {
				Content string `json:"content"`
			} `json:"record"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
		resp.Body.Close()
		require.NotNil(t, got.Record, "acknowledged row %s is gone after the crash", id)
		require.True(t, got.Record.Content == content(id), "row %s came back with other content", id)
	}
}

// A `strata serve` process is killed (-9) while a named consumer reads its change feed (batches
// of 7, processed, then committed, once read whole) and clients append (half sealed at once, half
// left to the flush sweeper); restarted, the consumer resumes from its committed cursor: every
// acknowledged row is delivered, and no row version comes again after a commit known to have
// taken effect (one whose answer the kill cut short may or may not have).
func TestAKill9MidDeliveryLosesAndRepeatsNoCommittedRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	p, base := startCrashServe(t, "feed-1", "200ms")
	post := func(path, body string) (int, error) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	status, err := post("/api/v1/rollouts", `{"name":"feed"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)
	status, err = post("/api/v1/rollouts/feed/consumers", `{"name":"c"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)

	var (
		mu        sync.Mutex
		acked     = map[string]bool{}
		committed = map[string]bool{} // id@_seq of batches whose commit is known to have taken effect
		delivered = map[string]bool{} // ids processed
		twice     []string            // row versions delivered again after a known commit (asserted at the end)
	)
	// consume reads one batch as the consumer and commits it when it arrived whole.
	consume := func() error {
		resp, err := http.Get(base + "/api/v1/rollouts/feed/changes?consumer=c&limit=7&wait=200ms")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("changes: %d", resp.StatusCode)
		}
		var rows []map[string]any
		cursor := ""
		dec := json.NewDecoder(resp.Body)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				break // the end, or a response cut short by the kill
			}
			if c, ok := m["_cursor"].(string); ok {
				cursor = c
				break
			}
			rows = append(rows, m)
		}
		if cursor == "" {
			return fmt.Errorf("a batch cut short")
		}
		// Processed before the commit, as a consumer does: a commit whose answer the kill cut
		// short may have taken effect (its rows do not come again) or not (they do).
		mu.Lock()
		for _, r := range rows {
			key := fmt.Sprintf("%v@%v", r["id"], r["_seq"])
			if committed[key] {
				twice = append(twice, key) // after a commit known to have taken effect
			}
			delivered[r["id"].(string)] = true
		}
		mu.Unlock()
		status, err := post("/api/v1/rollouts/feed/consumers/c/commit", `{"cursor":"`+cursor+`"}`)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("commit: %d %v", status, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			committed[fmt.Sprintf("%v@%v", r["id"], r["_seq"])] = true
		}
		return nil
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the writer
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("r%05d", i)
			flush := ""
			if i%2 == 0 {
				flush = "?flush=true"
			}
			status, err := post("/api/v1/rollouts/feed/records"+flush, `{"records":[{"id":"`+id+`","rollout_id":"t","content":"x"}]}`)
			if err != nil || status != http.StatusCreated {
				time.Sleep(20 * time.Millisecond)
				continue // not acknowledged
			}
			mu.Lock()
			acked[id] = true
			mu.Unlock()
		}
	}()
	go func() { // the consumer
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if consume() != nil {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)
	p.kill9()
	p.start()
	waitHealthy(t, base)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	// Drain: everything acknowledged is sealed within a flush interval, then delivered.
	deadline := time.Now().Add(time.Minute)
	for {
		require.NoError(t, consume())
		mu.Lock()
		missing := 0
		for id := range acked {
			if !delivered[id] {
				missing++
			}
		}
		n := len(acked)
		mu.Unlock()
		if missing == 0 {
			require.Greater(t, n, 20, "the run acknowledged too few rows to mean anything")
			require.Empty(t, twice, "row versions committed twice")
			return
		}
		if !time.Now().Before(deadline) {
			mu.Lock()
			var ids []string
			for id := range acked {
				if !delivered[id] {
					ids = append(ids, id)
				}
			}
			mu.Unlock()
			t.Fatalf("%d of %d acknowledged rows never delivered: %v", missing, n, ids)
		}
	}
}
