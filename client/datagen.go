// Datagen calls: checkpoint appends and the read lenses of a datagen store (item folds,
// failures, histories, root statuses, the overview, blobs). Events go in and folds come out as
// JSON in lance-context's DTO shapes; Append sends raw event batches.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// AppendCheckpoint appends one atomic step boundary of one item: its field events and exactly
// one STEP_COMPLETED (the server refuses anything else with a 400 and writes nothing).
func (c *Client) AppendCheckpoint(ctx context.Context, name string, events []json.RawMessage) (AppendResult, error) {
	body, _ := json.Marshal(map[string]any{"events": events})
	var res AppendResult
	err := c.doJSON(ctx, request{method: http.MethodPost, path: storePath(KindDatagen, name, "events"),
		query: url.Values{"checkpoint": {"true"}}, body: bytes.NewReader(body), contentType: "application/json"}, nil, &res)
	return res, err
}

// DatagenItem folds one item (FoldedDatagenItemDto as JSON); nil when the item never started.
// loadBlobs inlines blob bytes.
func (c *Client) DatagenItem(ctx context.Context, name, itemID string, loadBlobs bool) (json.RawMessage, error) {
	var r struct {
		Item json.RawMessage `json:"item"`
	}
	q := url.Values{}
	if loadBlobs {
		q.Set("load_blobs", "true")
	}
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(KindDatagen, name, "items", itemID), query: q}, nil, &r); err != nil {
		return nil, err
	}
	if string(r.Item) == "null" {
		return nil, nil
	}
	return r.Item, nil
}

// DatagenFailures lists an item's failures (DatagenFailureDto objects).
func (c *Client) DatagenFailures(ctx context.Context, name, itemID string) ([]json.RawMessage, error) {
	var r struct {
		Failures []json.RawMessage `json:"failures"`
	}
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(KindDatagen, name, "items", itemID, "failures")}, nil, &r)
	return r.Failures, err
}

// DatagenItemEvents is an item's raw history (events in item_seq order, without blob bytes).
func (c *Client) DatagenItemEvents(ctx context.Context, name, itemID string) ([]json.RawMessage, error) {
	return c.datagenEvents(ctx, storePath(KindDatagen, name, "items", itemID, "events"))
}

// DatagenRootEvents is a root's raw history and its sub-items'.
func (c *Client) DatagenRootEvents(ctx context.Context, name, rootItemID string) ([]json.RawMessage, error) {
	return c.datagenEvents(ctx, storePath(KindDatagen, name, "roots", rootItemID, "events"))
}

func (c *Client) datagenEvents(ctx context.Context, path string) ([]json.RawMessage, error) {
	var r struct {
		Events []json.RawMessage `json:"events"`
	}
	err := c.doJSON(ctx, request{method: http.MethodGet, path: path}, nil, &r)
	return r.Events, err
}

// DatagenOverview is the run overview (DatagenRunOverviewDto as JSON).
func (c *Client) DatagenOverview(ctx context.Context, name string) (json.RawMessage, error) {
	var o json.RawMessage
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(KindDatagen, name, "overview")}, nil, &o)
	return o, err
}

// DatagenRootStatuses classifies roots by lifecycle status; a root never started is absent.
func (c *Client) DatagenRootStatuses(ctx context.Context, name string, rootIDs []string) (map[string]string, error) {
	var r struct {
		Statuses map[string]string `json:"statuses"`
	}
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(KindDatagen, name, "root-status"),
		query: url.Values{"ids": {strings.Join(rootIDs, ",")}}}, nil, &r)
	return r.Statuses, err
}

// DatagenBlob downloads an event's blob; itemID (the event's item, as a fold's blob_event_ids
// pairs them) makes it a point read on the server, "" searches the log.
func (c *Client) DatagenBlob(ctx context.Context, name, eventID, itemID string) ([]byte, error) {
	q := url.Values{}
	if itemID != "" {
		q.Set("item_id", itemID)
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: storePath(KindDatagen, name, "blobs", eventID), query: q})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
