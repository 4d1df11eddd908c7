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

// A `strata serve` process on a local disk is killed (-9) while three clients append large
// batches (about 3 MB each, so their frames' whole blocks are written with O_DIRECT); restarted
// with its instance id, it answers every acknowledged row with the content that was sent.
func TestAKill9DuringLargeAppendsLosesNoAcknowledgedRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	port, err := testenv.FreePort()
	require.NoError(t, err)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p := &clusterProcess{t: t, args: []string{"serve"}, dir: t.TempDir(),
		env: []string{"STRATA_DATABASE_URL=" + testenv.Database(t), "STRATA_DATA_URL=file://" + t.TempDir(),
			"STRATA_INSTANCE_ID=crash-1", fmt.Sprintf("STRATA_LISTEN_ADDR=127.0.0.1:%d", port),
			"STRATA_FLUSH_INTERVAL=1h", "STRATA_LOG_LEVEL=warn"}}
	p.start()
	t.Cleanup(p.stop) // whichever run is the last (stopping one that has exited does nothing)
	waitHealthy(t, base)
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
