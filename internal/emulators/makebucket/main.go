// Command makebucket creates the container or bucket of a store URL on a local emulator, for
// `make run AZURE=1` (az://container, Azurite: AZURE_STORAGE_CONNECTION_STRING) and `make run
// GCS=1` (gs://bucket, fake-gcs-server: STORAGE_EMULATOR_HOST). Strata never creates buckets or
// containers; on a real service the operator does.
//
//	go run ./internal/emulators/makebucket az://strata
package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/strata-store/strata/internal/emulators"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "makebucket:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: makebucket az://container | gs://bucket")
	}
	u, err := url.Parse(args[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch u.Scheme {
	case "az":
		conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
		if conn == "" {
			return fmt.Errorf("AZURE_STORAGE_CONNECTION_STRING is not set (scripts/azurite.sh env prints it)")
		}
		return emulators.CreateAzureContainer(ctx, conn, u.Host)
	case "gs":
		host := os.Getenv("STORAGE_EMULATOR_HOST")
		if host == "" {
			return fmt.Errorf("STORAGE_EMULATOR_HOST is not set (scripts/fake-gcs.sh env prints it)")
		}
		return emulators.CreateGCSBucket(ctx, host, u.Host)
	}
	return fmt.Errorf("%s: only az:// and gs:// emulators", args[0])
}
