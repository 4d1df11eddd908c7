package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/contexts"
)

func ptr[T any](v T) *T { return &v }

// Every context call against a real server: create with a dimension and metric, add, upsert,
// update, search, retrieve, related, lookups and deletes.
func TestContextCalls(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(server(t, nil))
	require.NoError(t, err)
	_, created, err := c.CreateStore(ctx, client.KindContext, "agent", client.CreateOptions{EmbeddingDim: 2, DistanceMetric: "cosine"})
	require.NoError(t, err)
	require.True(t, created)
	page, err := c.ListStores(ctx, client.KindContext, "", "", 10)
	require.NoError(t, err)
	require.Len(t, page.Stores, 1)
	k, name, err := client.ParseRef("context/agent")
	require.NoError(t, err)
	require.Equal(t, client.KindContext, k)
	require.Equal(t, "agent", name)

	res, err := c.AddContextRecords(ctx, "agent", []contexts.AddRecord{
		{TextPayload: ptr("deploy runbook"), Embedding: []float32{1, 0}, Relationships: []contexts.Relationship{{TargetID: "doc://rb", Relation: "cites"}}},
		{TextPayload: ptr("lunch"), Embedding: []float32{0, 1}, ExternalID: ptr("menu")},
	}, true)
	require.NoError(t, err)
	require.Len(t, res.IDs, 2)
	_, err = c.AddContextRecords(ctx, "agent", []contexts.AddRecord{{Embedding: []float32{1, 2, 3}}}, false)
	var apiErr *client.Error
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, http.StatusBadRequest, apiErr.Status)

	found, err := c.SearchContext(ctx, "agent", contexts.SearchRequest{Query: []float32{1, 0.1}, Limit: ptr(1)})
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, res.IDs[0], found[0].Record.ID)
	got, err := c.RetrieveContext(ctx, "agent", contexts.RetrieveRequest{Text: ptr("runbook")})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, []string{contexts.ChannelText}, got[0].MatchedChannels)

	up, err := c.UpsertContextRecord(ctx, "agent", contexts.AddRecord{TextPayload: ptr("dinner"), ExternalID: ptr("menu")}, false)
	require.NoError(t, err)
	require.False(t, up.Inserted)
	require.Equal(t, res.IDs[1], *up.ReplacedID)
	rec, err := c.ContextRecordByExternalID(ctx, "agent", "menu")
	require.NoError(t, err)
	require.Equal(t, "dinner", *rec.TextPayload)
	upd, err := c.UpdateContextRecord(ctx, "agent", contexts.UpdateRequest{ExternalID: ptr("menu"), Patch: contexts.Patch{RetiredReason: ptr("stale")}}, false)
	require.NoError(t, err)
	require.True(t, upd.Updated)
	related, err := c.RelatedContextRecords(ctx, "agent", "doc://rb", "cites", client.ContextListOptions{})
	require.NoError(t, err)
	require.Len(t, related, 1)
	list, err := c.ListContextRecords(ctx, "agent", client.ContextListOptions{IncludeRetired: true})
	require.NoError(t, err)
	require.Len(t, list, 4, "two added, the upsert's successor and the update's")

	del, err := c.DeleteContextRecordByExternalID(ctx, "agent", "menu", false)
	require.NoError(t, err)
	require.True(t, del.Deleted)
	del, err = c.DeleteContextRecord(ctx, "agent", res.IDs[0], true)
	require.NoError(t, err)
	require.True(t, del.Deleted)
	gone, err := c.ContextRecord(ctx, "agent", res.IDs[0])
	require.NoError(t, err)
	require.Nil(t, gone)
}
