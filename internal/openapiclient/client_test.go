package openapiclient_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/datagen"
	"github.com/strata-store/strata/internal/openapiclient"
	"github.com/strata-store/strata/internal/openapiclient/codegen"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storecache"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

// The served document validates (kin-openapi) and generates exactly the checked-in client:
// `go generate ./internal/openapiclient` after changing a route or a DTO.
func TestTheGeneratedClientIsCurrent(t *testing.T) {
	want, err := codegen.Source()
	require.NoError(t, err)
	got, err := os.ReadFile("client.gen.go")
	require.NoError(t, err)
	require.Equal(t, want, string(got), "client.gen.go is stale: run go generate ./internal/openapiclient")
}

func ptr[T any](v T) *T { return &v }

// A client generated from nothing but the document creates stores, appends and reads against a
// real worker, and decodes its error answers.
func TestTheGeneratedClientDrivesARealServer(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	mgr, err := storecache.New(cat, storecache.Config{DataURL: t.TempDir(), Store: lsm.Options{Instance: "w"}}, reg, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	srv := httptest.NewServer(api.New(api.Deps{Log: log, Catalog: cat, Stores: mgr, Registry: reg, Version: "test"}))
	t.Cleanup(srv.Close)
	c, err := openapiclient.NewClientWithResponses(srv.URL)
	require.NoError(t, err)

	created, err := c.CreateRolloutStoreWithResponse(ctx, &openapiclient.CreateRolloutStoreParams{}, openapiclient.CreateStoreRequest{Name: "gen"})
	require.NoError(t, err)
	require.Equal(t, 201, created.StatusCode(), string(created.Body))
	require.Equal(t, "gen", created.JSON201.Name)
	again, err := c.CreateRolloutStoreWithResponse(ctx, &openapiclient.CreateRolloutStoreParams{}, openapiclient.CreateStoreRequest{Name: "gen"})
	require.NoError(t, err)
	require.NotNil(t, again.JSON409)
	require.Equal(t, "ALREADY_EXISTS", again.JSON409.Error.Code)

	added, err := c.AddRolloutRecordsWithResponse(ctx, "gen", &openapiclient.AddRolloutRecordsParams{Flush: ptr(true)},
		openapiclient.AddRolloutRecordsJSONRequestBody{Records: []openapiclient.RolloutRecord{
			{Id: "a", RolloutId: "t1", Content: ptr("hello"), Reward: ptr(float32(0.5))},
			{Id: "b", RolloutId: "t1", SequenceOrder: ptr(int32(1))},
		}})
	require.NoError(t, err)
	require.Equal(t, 201, added.StatusCode(), string(added.Body))
	require.EqualValues(t, 2, added.JSON201.Count)
	require.ElementsMatch(t, []string{"a", "b"}, *added.JSON201.Ids)

	got, err := c.GetRolloutRecordWithResponse(ctx, "gen", "a", &openapiclient.GetRolloutRecordParams{})
	require.NoError(t, err)
	require.Equal(t, 200, got.StatusCode())
	require.Equal(t, "hello", *got.JSON200.Record.Content)
	require.EqualValues(t, 0.5, *got.JSON200.Record.Reward)
	listed, err := c.ListRolloutRecordsWithResponse(ctx, "gen", &openapiclient.ListRolloutRecordsParams{Filters: ptr("sequence_order = 1")})
	require.NoError(t, err)
	require.Len(t, listed.JSON200.Records, 1)
	require.Equal(t, "b", listed.JSON200.Records[0].Id)
	missing, err := c.GetRolloutStoreWithResponse(ctx, "nope")
	require.NoError(t, err)
	require.Equal(t, "NOT_FOUND", missing.JSON404.Error.Code)

	// Datagen through the generated types too.
	dg, err := c.CreateDatagenStoreWithResponse(ctx, &openapiclient.CreateDatagenStoreParams{}, openapiclient.CreateStoreRequest{Name: "log"})
	require.NoError(t, err)
	require.Equal(t, 201, dg.StatusCode(), string(dg.Body))
	ev, err := c.AppendDatagenEventsWithResponse(ctx, "log", &openapiclient.AppendDatagenEventsParams{}, openapiclient.AppendDatagenEventsJSONRequestBody{
		Events: []openapiclient.Event{{EventId: datagen.EventID("5", "created", 0), ItemId: "5", RootItemId: "5", CheckpointId: "created",
			EventType: "ITEM_CREATED", RunId: "r", WriterEpoch: "w", SchemaVersion: 2}},
	})
	require.NoError(t, err)
	require.Equal(t, 201, ev.StatusCode(), string(ev.Body))
	item, err := c.FoldDatagenItemWithResponse(ctx, "log", "5", &openapiclient.FoldDatagenItemParams{})
	require.NoError(t, err)
	require.Equal(t, "running", item.JSON200.Item.Status)
}
