package worker_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/worker"
)

// harness is a catalog, a store manager and a client of the real Temporal dev server.
type harness struct {
	cat *catalog.Catalog
	mgr *storecache.Manager
	c   client.Client
}

// temporalClient dials the dev server make test starts, or skips the test without one.
func temporalClient(t testing.TB) client.Client {
	addr := os.Getenv("STRATA_TEST_TEMPORAL_ADDRESS")
	if addr == "" {
		t.Skip("STRATA_TEST_TEMPORAL_ADDRESS is not set (make test starts the Temporal dev server and sets it)")
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func newHarness(t testing.TB) *harness {
	c := temporalClient(t)
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	mgr, err := storecache.New(cat, storecache.Config{DataURL: t.TempDir(), Store: lsm.Options{Instance: "api"}}, nil,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	return &harness{cat: cat, mgr: mgr, c: c}
}

// startWorker runs the maintenance worker until the test ends.
func (h *harness) startWorker(t testing.TB) {
	w := worker.New(h.c, &activities.Activities{Stores: h.mgr}, worker.Options{})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
}

// faultyManager is a store manager over dataDir whose object store goes through a
// fault-injecting wrapper (returned), with opts for its stores.
func faultyManager(t testing.TB, cat *catalog.Catalog, dataDir string, opts lsm.Options) (*storecache.Manager, *objstoretest.Faulty) {
	var faults *objstoretest.Faulty
	mgr, err := storecache.New(cat, storecache.Config{DataURL: dataDir, Store: opts,
		WrapObjects: func(s objstore.Store) objstore.Store { faults = objstoretest.NewFaulty(s); return faults }},
		nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	return mgr, faults
}

// isRead matches object-store reads (for fault rules).
func isRead(op objstoretest.Op, _ string) bool {
	return op == objstoretest.OpGet || op == objstoretest.OpGetRange
}

// startFaultyWorker opens a fresh catalog and a faulty store manager (an API worker's: it
// appends), and runs a maintenance worker over them on c (search attributes on) until the test
// ends.
func startFaultyWorker(t testing.TB, c client.Client) (*catalog.Catalog, *storecache.Manager, *objstoretest.Faulty) {
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	mgr, faults := faultyManager(t, cat, t.TempDir(), lsm.Options{Instance: "api"})
	w := worker.New(c, &activities.Activities{Stores: mgr, SearchAttributes: true}, worker.Options{})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return cat, mgr, faults
}
