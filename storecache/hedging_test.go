package storecache

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
)

// A location on an object store reads through hedged reads and a disk location does not; the
// second requests are counted in one lint-clean metric over every location.
func TestObjectStoreLocationsHedgeTheirReadsAndCountThem(t *testing.T) {
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	reg := prometheus.NewRegistry()
	m, err := New(cat, Config{DataURL: testenv.S3(t), Locations: []Location{{Name: "disk", URL: t.TempDir()}},
		Store: lsm.Options{Instance: "w"}}, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	require.NotNil(t, m.locations[0].hedged, "an object store's small reads are hedged")
	require.Nil(t, m.locations[1].hedged, "a disk's are not")

	families, err := reg.Gather()
	require.NoError(t, err)
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	require.NoError(t, err)
	require.Empty(t, problems, "%v", problems)
	found := false
	for _, f := range families {
		if f.GetName() == "strata_objstore_hedged_reads_total" {
			found = true
			require.Zero(t, f.GetMetric()[0].GetCounter().GetValue())
		}
	}
	require.True(t, found, "the hedged-reads counter is registered")
}
