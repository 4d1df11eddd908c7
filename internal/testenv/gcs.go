// A real GCS API for tests: fake-gcs-server (installed into bin/ by `make tools`), the one named
// by STRATA_TEST_GCS_URL and STORAGE_EMULATOR_HOST (started by `make test` through
// scripts/fake-gcs.sh), or, when those are unset, a throwaway one this test binary starts on a
// free port and stops when the process exits. Each test gets its own prefix in the bucket, which
// is created once.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
)

// GCSTestBucket is the bucket the tests' stores live in.
const GCSTestBucket = "strata-test"

var (
	gcsOnce sync.Once
	gcsURL  string // the bucket's store URL, without a prefix
	gcsErr  error
)

// GCS returns the store URL of a fresh, empty prefix in a real GCS API's bucket, with the
// emulator's address in the environment. It skips the test when no service is configured and
// bin/fake-gcs-server is missing (run `make tools`).
func GCS(t testing.TB) string {
	t.Helper()
	gcsOnce.Do(func() { gcsURL, gcsErr = gcsBucket() })
	if gcsErr != nil {
		t.Skipf("testenv: no GCS service: %v (run `make tools`, or set STRATA_TEST_GCS_URL)", gcsErr)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	u, err := withPrefix(gcsURL, "t-"+hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func gcsBucket() (string, error) {
	u := os.Getenv("STRATA_TEST_GCS_URL")
	if u == "" || os.Getenv("STORAGE_EMULATOR_HOST") == "" {
		var err error
		if u, err = startFakeGCS(); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, err := storage.NewClient(ctx)
	if err != nil {
		return "", err
	}
	defer client.Close()
	var ge *googleapi.Error
	if err := client.Bucket(GCSTestBucket).Create(ctx, "strata-test-project", nil); err != nil && !(errors.As(err, &ge) && ge.Code == 409) {
		return "", fmt.Errorf("create bucket %s: %w", GCSTestBucket, err)
	}
	return u, nil
}

func startFakeGCS() (string, error) {
	bin := filepath.Join(RepoRoot(), "bin", "fake-gcs-server")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s not found", bin)
	}
	dir, err := os.MkdirTemp("", "strata-gcs-")
	if err != nil {
		return "", err
	}
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", fmt.Sprint(port), "-public-host", addr,
		"-backend", "filesystem", "-filesystem-root", dir, "-log-level", "error")
	dieWithParent(cmd) // the emulator lives exactly as long as the test binary
	if err := cmd.Start(); err != nil {
		return "", err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return "", fmt.Errorf("fake-gcs-server did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	os.Setenv("STORAGE_EMULATOR_HOST", addr)
	return "gs://" + GCSTestBucket, nil
}
