// A real S3 server for tests: the versitygw process named by STRATA_TEST_S3_URL (started by
// `make test` through scripts/s3.sh), or, when that is unset, a throwaway one this test binary
// starts from bin/versitygw on a free port and stops when the process exits. Each test gets its
// own prefix in the bucket.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	s3Once sync.Once
	s3URL  string // the bucket's store URL, without a prefix
	s3Err  error
)

// S3 returns the store URL of a fresh, empty prefix in a real S3 server's bucket, with the
// credentials for it in the environment. It skips the test when no server is configured and
// bin/versitygw is missing (run `make tools`).
func S3(t testing.TB) string {
	t.Helper()
	if err := s3Available(); err != nil {
		t.Skipf("testenv: no S3 server: %v (run `make tools`, or set STRATA_TEST_S3_URL)", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	u, err := withPrefix(s3URL, "t-"+hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// s3Available reports why there is no S3 server for the tests, if there is none (finding or
// starting one the first time).
func s3Available() error {
	s3Once.Do(func() { s3URL, s3Err = s3Bucket() })
	return s3Err
}

// withPrefix appends prefix to the URL's path (s3://bucket?query -> s3://bucket/prefix?query).
func withPrefix(raw, prefix string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.Path = path.Join("/", u.Path, prefix)
	return u.String(), nil
}

const (
	testS3Access = "strata-test"
	testS3Secret = "strata-test-secret"
)

func s3Bucket() (string, error) {
	if u := os.Getenv("STRATA_TEST_S3_URL"); u != "" {
		return u, nil
	}
	bin := filepath.Join(RepoRoot(), "bin", "versitygw")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s not found", bin)
	}
	dir, err := os.MkdirTemp("", "strata-s3-")
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(filepath.Join(dir, "strata-test"), 0o755); err != nil {
		return "", err
	}
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+testS3Access, "ROOT_SECRET_KEY="+testS3Secret)
	dieWithParent(cmd) // the server lives exactly as long as the test binary
	if err := cmd.Start(); err != nil {
		return "", err
	}
	if err := awaitListening(cmd, "versitygw", port, 20*time.Second); err != nil {
		return "", err
	}
	os.Setenv("AWS_ACCESS_KEY_ID", testS3Access)
	os.Setenv("AWS_SECRET_ACCESS_KEY", testS3Secret)
	return fmt.Sprintf("s3://strata-test?endpoint=http://127.0.0.1:%d&path_style=true&region=us-east-1", port), nil
}

// awaitListening waits until the server cmd started listens on port (killing it when it does not
// within timeout).
func awaitListening(cmd *exec.Cmd, name string, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("%s did not listen on port %d", name, port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
