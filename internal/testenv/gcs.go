// A real GCS API for tests: fake-gcs-server (installed into bin/ by `make tools`), the one named
// by STRATA_TEST_GCS_URL and STORAGE_EMULATOR_HOST (started by `make test` through
// scripts/fake-gcs.sh), or, when those are unset, a throwaway one this test binary starts on a
// free port and stops when the process exits. Each test gets a bucket of its own, created over the
// JSON API with net/http (this package does not link Google's client: only the gs:// store's
// package and the binaries do).
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-store/strata/internal/emulators"
)

// GCSTestBucket is the bucket the tests' stores live in.
const GCSTestBucket = "strata-test"

var (
	gcsOnce sync.Once
	gcsErr  error // why there is no service, if there is none
)

// GCS returns the store URL of a fresh, empty bucket of its own in a real GCS API, with the
// emulator's address in the environment (STORAGE_EMULATOR_HOST). A bucket per test, not a prefix:
// fake-gcs-server walks a whole bucket for every listing, so a shared one would make each test's
// listings slower by everything earlier tests wrote. It skips the test when no service is
// configured and bin/fake-gcs-server is missing (run `make tools`). Opening the URL needs the
// gs:// store registered: import storage/objstore/gcs.
func GCS(t testing.TB) string {
	t.Helper()
	if err := gcsAvailable(); err != nil {
		t.Skipf("testenv: no GCS service: %v (run `make tools`, or set STRATA_TEST_GCS_URL)", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	bucket := GCSTestBucket + "-" + hex.EncodeToString(b[:])
	if err := createGCSBucket(bucket); err != nil {
		t.Fatal(err)
	}
	return "gs://" + bucket
}

// gcsAvailable reports why there is no GCS service for the tests, if there is none (finding or
// starting one the first time).
func gcsAvailable() error {
	gcsOnce.Do(func() {
		if gcsErr = gcsService(); gcsErr == nil {
			gcsErr = createGCSBucket(GCSTestBucket) // the service answers
		}
	})
	return gcsErr
}

// FakeGCSBin is where `make tools` installs fake-gcs-server.
func FakeGCSBin() string { return filepath.Join(RepoRoot(), "bin", "fake-gcs-server") }

// gcsService makes sure a test service is configured, starting a throwaway emulator when none is.
func gcsService() error {
	if os.Getenv("STRATA_TEST_GCS_URL") == "" || os.Getenv("STORAGE_EMULATOR_HOST") == "" {
		return startFakeGCS()
	}
	return nil
}

// createGCSBucket creates bucket on the configured emulator (an existing one is fine).
func createGCSBucket(bucket string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return emulators.CreateGCSBucket(ctx, os.Getenv("STORAGE_EMULATOR_HOST"), bucket)
}

func startFakeGCS() error {
	bin := FakeGCSBin()
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s not found", bin)
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", fmt.Sprint(port), "-public-host", addr,
		"-backend", "memory", "-log-level", "error") // its filesystem backend lists whole buckets: slow
	dieWithParent(cmd) // the emulator lives exactly as long as the test binary
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := awaitListening(cmd, "fake-gcs-server", port, 20*time.Second); err != nil {
		return err
	}
	os.Setenv("STORAGE_EMULATOR_HOST", addr)
	return nil
}
