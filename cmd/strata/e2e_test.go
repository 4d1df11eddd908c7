package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
)

// Two `strata serve` processes on one data directory and one PostgreSQL: rows appended through
// both are readable from each after a flush, and a graceful stop seals what is left.
func TestTwoServeProcessesShareStores(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "strata")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	db, data := testenv.Database(t), t.TempDir()
	start := func(instance string) string {
		port, err := testenv.FreePort()
		require.NoError(t, err)
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(),
			"STRATA_LISTEN_ADDR="+fmt.Sprintf("127.0.0.1:%d", port), "STRATA_DATABASE_URL="+db,
			"STRATA_DATA_URL=file://"+data, "STRATA_INSTANCE_ID="+instance, "STRATA_FLUSH_INTERVAL=1h",
			"STRATA_LOG_LEVEL=warn")
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		require.Eventually(t, func() bool {
			resp, err := http.Get(base + "/api/v1/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 20*time.Second, 50*time.Millisecond)
		return base
	}
	post := func(url string, body any) int {
		data, _ := json.Marshal(body)
		resp, err := http.Post(url, "application/json", bytes.NewReader(data))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	a, b := start("worker-a"), start("worker-b")
	require.Equal(t, http.StatusCreated, post(a+"/api/v1/rollouts", map[string]any{"name": "shared"}))
	var want []string
	for i, base := range []string{a, b, a, b} {
		var recs []any
		for j := range 25 {
			id := fmt.Sprintf("w%d-r%02d", i, j)
			want = append(want, id)
			recs = append(recs, map[string]any{"id": id, "rollout_id": "t"})
		}
		require.Equal(t, http.StatusCreated, post(base+"/api/v1/rollouts/shared/records", map[string]any{"records": recs}))
	}
	for _, base := range []string{a, b} {
		req, _ := http.NewRequest("POST", base+"/api/v1/rollouts/shared/flush", nil)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
	}
	for _, base := range []string{a, b} {
		var got []string
		cursor := ""
		for {
			resp, err := http.Get(base + "/api/v1/rollouts/shared/records?limit=30&cursor=" + cursor)
			require.NoError(t, err)
			var page struct {
				Records []struct {
					ID string `json:"id"`
				} `json:"records"`
				NextCursor string `json:"next_cursor"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
			resp.Body.Close()
			for _, r := range page.Records {
				got = append(got, r.ID)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		require.ElementsMatch(t, want, got, "every row is readable from %s", base)
	}
}
