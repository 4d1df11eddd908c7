package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/datagen"
)

func ev(item string, seq int64, cp string, ord uint32, typ string, extra map[string]any) map[string]any {
	e := map[string]any{"event_id": datagen.EventID(item, cp, ord), "item_id": item, "root_item_id": item, "item_seq": seq,
		"checkpoint_id": cp, "event_type": typ, "run_id": "r1", "writer_epoch": "w1", "schema_version": 2}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

func TestDatagenCalls(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(server(t, nil))
	require.NoError(t, err)
	_, created, err := c.CreateStore(ctx, client.KindDatagen, "exp", client.CreateOptions{})
	require.NoError(t, err)
	require.True(t, created)

	res, err := c.Append(ctx, client.KindDatagen, "exp", rows(t, ev("5", 0, "created", 0, "ITEM_CREATED", nil)), false)
	require.NoError(t, err)
	require.Equal(t, 1, res.Count)
	step := map[string]any{"step_name": "gen", "step_kind": "leaf", "step_index": 0}
	field := map[string]any{"step_name": "gen", "step_kind": "leaf", "step_index": 0, "field_name": "img", "field_type": "png",
		"codec_version": 1, "value": map[string]any{"kind": "blob", "bytes": base64.StdEncoding.EncodeToString([]byte("png!"))}}
	res, err = c.AppendCheckpoint(ctx, "exp", rows(t, ev("5", 1, "gen-0", 0, "FIELD_SET", field), ev("5", 2, "gen-0", 1, "STEP_COMPLETED", step)))
	require.NoError(t, err)
	require.Equal(t, 2, res.Count)
	_, err = c.AppendCheckpoint(ctx, "exp", rows(t, ev("5", 3, "gen-1", 0, "FIELD_SET", field)))
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 400, apiErr.Status)

	raw, err := c.DatagenItem(ctx, "exp", "5", false)
	require.NoError(t, err)
	var item datagen.FoldedItem
	require.NoError(t, json.Unmarshal(raw, &item))
	require.Len(t, item.Trajectory, 1)
	blob, err := c.DatagenBlob(ctx, "exp", item.BlobEventIDs["img"], "5")
	require.NoError(t, err)
	require.Equal(t, "png!", string(blob))
	none, err := c.DatagenItem(ctx, "exp", "6", false)
	require.NoError(t, err)
	require.Nil(t, none)

	failures, err := c.DatagenFailures(ctx, "exp", "5")
	require.NoError(t, err)
	require.Empty(t, failures)
	hist, err := c.DatagenItemEvents(ctx, "exp", "5")
	require.NoError(t, err)
	require.Len(t, hist, 3)
	hist, err = c.DatagenRootEvents(ctx, "exp", "5")
	require.NoError(t, err)
	require.Len(t, hist, 3)
	statuses, err := c.DatagenRootStatuses(ctx, "exp", []string{"5", "6"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"5": "running"}, statuses)
	o, err := c.DatagenOverview(ctx, "exp")
	require.NoError(t, err)
	var overview datagen.Overview
	require.NoError(t, json.Unmarshal(o, &overview))
	require.Equal(t, 1, overview.Items)
	require.Equal(t, map[string]int{"gen": 1}, overview.CompletedSteps)
}
