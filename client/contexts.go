// Context store calls: add, upsert, update, delete and read agent-memory records, and search and
// retrieve them. Requests and answers are the contexts package's wire types (lance-context's
// DTOs), so a record reads the same here as on the wire.
package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/strata-store/strata/contexts"
)

// AddContextRecords adds records (the server chooses their ids, answered in order); flush seals
// them so every worker sees them at once.
func (c *Client) AddContextRecords(ctx context.Context, name string, records []contexts.AddRecord, flush bool) (AppendResult, error) {
	var res AppendResult
	err := c.doJSON(ctx, request{method: http.MethodPost, path: storePath(KindContext, name, "records"), query: flushQuery(flush)},
		contexts.AddRecordsRequest{Records: records}, &res)
	return res, err
}

// UpsertContextRecord inserts rec, or replaces the record holding its external id (required): the
// new record supersedes it.
func (c *Client) UpsertContextRecord(ctx context.Context, name string, rec contexts.AddRecord, flush bool) (contexts.UpsertResponse, error) {
	var res contexts.UpsertResponse
	err := c.doJSON(ctx, request{method: http.MethodPut, path: storePath(KindContext, name, "records"), query: flushQuery(flush)},
		contexts.UpsertRequest{Record: rec, Key: "external_id"}, &res)
	return res, err
}

// UpdateContextRecord applies patch to the record of id or external id (set exactly one in req):
// a successor supersedes it. Updated is false when no current record matched.
func (c *Client) UpdateContextRecord(ctx context.Context, name string, req contexts.UpdateRequest, flush bool) (contexts.UpdateResponse, error) {
	var res contexts.UpdateResponse
	err := c.doJSON(ctx, request{method: http.MethodPatch, path: storePath(KindContext, name, "records"), query: flushQuery(flush)}, req, &res)
	return res, err
}

// DeleteContextRecord deletes a record by id; Deleted reports whether it existed.
func (c *Client) DeleteContextRecord(ctx context.Context, name, id string, flush bool) (contexts.DeleteResponse, error) {
	var res contexts.DeleteResponse
	err := c.doJSON(ctx, request{method: http.MethodDelete, path: storePath(KindContext, name, "records", id), query: flushQuery(flush)}, nil, &res)
	return res, err
}

// DeleteContextRecordByExternalID deletes the record holding an external id.
func (c *Client) DeleteContextRecordByExternalID(ctx context.Context, name, externalID string, flush bool) (contexts.DeleteResponse, error) {
	q := url.Values{"external_id": {externalID}}
	if flush {
		q.Set("flush", "true")
	}
	var res contexts.DeleteResponse
	err := c.doJSON(ctx, request{method: http.MethodDelete, path: storePath(KindContext, name, "records"), query: q}, nil, &res)
	return res, err
}

// ContextRecord reads a record by id, whatever its lifecycle (nil when absent).
func (c *Client) ContextRecord(ctx context.Context, name, id string) (*contexts.Record, error) {
	var res contexts.RecordResponse
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(KindContext, name, "records", id)}, nil, &res)
	return res.Record, err
}

// ContextRecordByExternalID reads the record holding an external id (nil when none does).
func (c *Client) ContextRecordByExternalID(ctx context.Context, name, externalID string) (*contexts.Record, error) {
	var res contexts.RecordResponse
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(KindContext, name, "records", "by-external-id"),
		query: url.Values{"external_id": {externalID}}}, nil, &res)
	return res.Record, err
}

// ContextListOptions narrow ListContextRecords and RelatedContextRecords.
type ContextListOptions struct {
	Limit, Offset  int
	Filters        string // a JSON filter object (built-in fields, created_at bounds, metadata keys)
	IncludeExpired bool
	IncludeRetired bool
}

func (o ContextListOptions) query() url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Offset > 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	if o.Filters != "" {
		q.Set("filters", o.Filters)
	}
	if o.IncludeExpired {
		q.Set("include_expired", "true")
	}
	if o.IncludeRetired {
		q.Set("include_retired", "true")
	}
	return q
}

// ListContextRecords lists visible records in creation order (binary payloads omitted).
func (c *Client) ListContextRecords(ctx context.Context, name string, opts ContextListOptions) ([]contexts.Record, error) {
	var res contexts.RecordsResponse
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(KindContext, name, "records"), query: opts.query()}, nil, &res)
	return res.Records, err
}

// RelatedContextRecords lists visible records with a relationship to target (of relation, when
// not empty).
func (c *Client) RelatedContextRecords(ctx context.Context, name, target, relation string, opts ContextListOptions) ([]contexts.Record, error) {
	q := opts.query()
	q.Set("target_id", target)
	if relation != "" {
		q.Set("relation", relation)
	}
	var res contexts.RecordsResponse
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(KindContext, name, "records", "related"), query: q}, nil, &res)
	return res.Records, err
}

// SearchContext finds the records nearest to req.Query.
func (c *Client) SearchContext(ctx context.Context, name string, req contexts.SearchRequest) ([]contexts.SearchResult, error) {
	var res contexts.SearchResponse
	err := c.doJSON(ctx, request{method: http.MethodPost, path: storePath(KindContext, name, "search")}, req, &res)
	return res.Results, err
}

// RetrieveContext ranks records by text, vector or both, fused by reciprocal rank fusion.
func (c *Client) RetrieveContext(ctx context.Context, name string, req contexts.RetrieveRequest) ([]contexts.RetrieveResult, error) {
	var res contexts.RetrieveResponse
	err := c.doJSON(ctx, request{method: http.MethodPost, path: storePath(KindContext, name, "retrieve")}, req, &res)
	return res.Results, err
}
