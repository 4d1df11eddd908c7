// Package emulators creates the container or bucket a local object-store emulator serves stores
// from: Azurite's container (through the Azure SDK, with the emulator's connection string) and
// fake-gcs-server's bucket (over the JSON API with net/http, so that nothing here links Google's
// client). Strata itself never creates a bucket or container; the tests (internal/testenv) and
// `make run AZURE=1` / `GCS=1` (the makebucket command) use this.
package emulators

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// CreateAzureContainer creates container in the blob service connectionString names (an
// existing one is fine).
func CreateAzureContainer(ctx context.Context, connectionString, name string) error {
	c, err := container.NewClientFromConnectionString(connectionString, name, nil)
	if err != nil {
		return err
	}
	if _, err := c.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create container %s: %w", name, err)
	}
	return nil
}

// CreateGCSBucket creates bucket on the GCS emulator at host (STORAGE_EMULATOR_HOST's form:
// host:port or a URL; an existing bucket is fine).
func CreateGCSBucket(ctx context.Context, host, bucket string) error {
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, host+"/storage/v1/b?project=strata-local",
		strings.NewReader(`{"name":"`+bucket+`"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("create bucket %s: HTTP %d: %s", bucket, resp.StatusCode, body)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the connection is reused
	return nil
}
