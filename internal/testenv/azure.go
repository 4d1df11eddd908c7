// A real Azure Blob service for tests: Azurite (the Azure Storage emulator; npm package azurite,
// installed into tools/azurite by `make tools`), the one named by STRATA_TEST_AZURE_URL and
// AZURE_STORAGE_CONNECTION_STRING (started by `make test` through scripts/azurite.sh), or, when
// those are unset, a throwaway one this test binary starts on a free port and stops when the
// process exits. Each test gets its own prefix in the container, which is created once.
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

// AzuriteAccount and AzuriteKey are the emulator's well-known development account (public: every
// Azurite serves it).
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	// AzureTestContainer is the container the tests' stores live in.
	AzureTestContainer = "strata-test"
)

// AzuriteConnectionString is the connection string of an Azurite blob service on port.
func AzuriteConnectionString(port int) string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=http://127.0.0.1:%d/%s;",
		AzuriteAccount, AzuriteKey, port, AzuriteAccount)
}

var (
	azureOnce sync.Once
	azureURL  string // the container's store URL, without a prefix
	azureErr  error
)

// Azure returns the store URL of a fresh, empty prefix in a real Azure Blob container, with the
// connection string for it in the environment. It skips the test when no service is configured
// and Azurite is not installed (run `make tools`).
func Azure(t testing.TB) string {
	t.Helper()
	if err := azureAvailable(); err != nil {
		t.Skipf("testenv: no Azure Blob service: %v (run `make tools`, or set STRATA_TEST_AZURE_URL)", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	u, err := withPrefix(azureURL, "t-"+hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// azureAvailable reports why there is no Azure Blob service for the tests, if there is none
// (finding or starting one the first time).
func azureAvailable() error {
	azureOnce.Do(func() { azureURL, azureErr = azureContainer() })
	return azureErr
}

// AzuriteBin is where `make tools` installs Azurite's blob service.
func AzuriteBin() string {
	return filepath.Join(RepoRoot(), "tools", "azurite", "node_modules", ".bin", "azurite-blob")
}

func azureContainer() (string, error) {
	u := os.Getenv("STRATA_TEST_AZURE_URL")
	if u == "" || os.Getenv("AZURE_STORAGE_CONNECTION_STRING") == "" {
		var err error
		if u, err = startAzurite(); err != nil {
			return "", err
		}
	}
	// The container, created once (an existing one is fine).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := emulators.CreateAzureContainer(ctx, os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), AzureTestContainer); err != nil {
		return "", err
	}
	return u, nil
}

func startAzurite() (string, error) {
	bin := AzuriteBin()
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s not found", bin)
	}
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", fmt.Sprint(port),
		"--silent", "--skipApiVersionCheck", "--loose", "--disableTelemetry", "--inMemoryPersistence")
	dieWithParent(cmd) // the emulator lives exactly as long as the test binary
	if err := cmd.Start(); err != nil {
		return "", err
	}
	if err := awaitListening(cmd, "azurite", port, 30*time.Second); err != nil {
		return "", err
	}
	os.Setenv("AZURE_STORAGE_CONNECTION_STRING", AzuriteConnectionString(port))
	return "az://" + AzureTestContainer, nil
}
