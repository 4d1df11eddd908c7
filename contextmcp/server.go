// Package contextmcp is `strata mcp`: a Model Context Protocol server (the official Go SDK) that
// gives agents their memory where they already are. Its tools add, update, search, retrieve,
// get, relate and retire the records of a context store, through a Strata API endpoint (the Go
// client): the server holds no data and no credentials of its own beyond the API token.
package contextmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/contexts"
)

// Options configure the server.
type Options struct {
	// Store is the context store a tool call works on when it names none.
	Store string
	// Version is reported to clients as the server implementation's version.
	Version string
}

// New is an MCP server whose tools call c.
func New(c *client.Client, opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "strata", Title: "Strata agent memory", Version: opts.Version},
		&mcp.ServerOptions{Instructions: "Agent memory in Strata context stores: add what you learn (context_add), " +
			"find it again before the next step (context_retrieve for text and/or a vector, context_search for a vector), " +
			"correct it (context_update), link records (context_relate) and retire what no longer holds (context_retire)."})
	t := &tools{c: c, store: opts.Store}
	mcp.AddTool(s, &mcp.Tool{Name: "context_add", Description: "Add a record to a context store; answers its id."}, t.add)
	mcp.AddTool(s, &mcp.Tool{Name: "context_update", Description: "Update a record by id or external_id: a successor with the changes supersedes it."}, t.update)
	mcp.AddTool(s, &mcp.Tool{Name: "context_search", Description: "The records nearest to a vector (filters apply before ranking)."}, t.search)
	mcp.AddTool(s, &mcp.Tool{Name: "context_retrieve", Description: "Hybrid retrieval: text and/or vector, fused by reciprocal rank fusion."}, t.retrieve)
	mcp.AddTool(s, &mcp.Tool{Name: "context_get", Description: "One record by id or external_id (null when absent)."}, t.get)
	mcp.AddTool(s, &mcp.Tool{Name: "context_relate", Description: "Add a relationship from a record to a target (another record's id or any node)."}, t.relate)
	mcp.AddTool(s, &mcp.Tool{Name: "context_retire", Description: "Retire a record: it is hidden from searches unless include_retired is asked."}, t.retire)
	return s
}

type tools struct {
	c     *client.Client
	store string
}

// storeOf is the store a call names, or the server's default.
func (t *tools) storeOf(name string) (string, error) {
	if name != "" {
		return name, nil
	}
	if t.store == "" {
		return "", errors.New("no store: pass \"store\" (the server has no default --store)")
	}
	return t.store, nil
}

// Ref names a record: by id or by external id.
type Ref struct {
	Store      string `json:"store,omitempty" jsonschema:"the context store (default: the server's --store)"`
	ID         string `json:"id,omitempty" jsonschema:"the record's id"`
	ExternalID string `json:"external_id,omitempty" jsonschema:"the record's external id (instead of id)"`
}

// target is the store and the record a call names (an update request with no patch yet).
func (t *tools) target(r Ref) (string, contexts.UpdateRequest, error) {
	store, err := t.storeOf(r.Store)
	if err != nil {
		return "", contexts.UpdateRequest{}, err
	}
	req, err := r.request()
	return store, req, err
}

func (r Ref) request() (contexts.UpdateRequest, error) {
	switch {
	case (r.ID == "") == (r.ExternalID == ""):
		return contexts.UpdateRequest{}, errors.New("name the record by exactly one of id or external_id")
	case r.ID != "":
		return contexts.UpdateRequest{ID: &r.ID}, nil
	}
	return contexts.UpdateRequest{ExternalID: &r.ExternalID}, nil
}

// AddInput is context_add's input.
type AddInput struct {
	Store         string                  `json:"store,omitempty" jsonschema:"the context store (default: the server's --store)"`
	Text          string                  `json:"text" jsonschema:"what to remember"`
	Role          string                  `json:"role,omitempty" jsonschema:"user, assistant, system, tool... (default user)"`
	Embedding     []float32               `json:"embedding,omitempty" jsonschema:"the text's embedding, when the agent has one"`
	ExternalID    string                  `json:"external_id,omitempty" jsonschema:"the caller's own key for the record"`
	SessionID     string                  `json:"session_id,omitempty"`
	BotID         string                  `json:"bot_id,omitempty"`
	Metadata      map[string]any          `json:"metadata,omitempty" jsonschema:"any JSON object"`
	Relationships []contexts.Relationship `json:"relationships,omitempty"`
	ExpiresAt     *time.Time              `json:"expires_at,omitempty" jsonschema:"when the record stops being returned"`
}

// AddOutput is context_add's answer.
type AddOutput struct {
	ID string `json:"id"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func metadataDoc(m map[string]any) (json.RawMessage, error) {
	if m == nil {
		return nil, nil
	}
	return json.Marshal(m)
}

func (t *tools) add(ctx context.Context, _ *mcp.CallToolRequest, in AddInput) (*mcp.CallToolResult, AddOutput, error) {
	store, err := t.storeOf(in.Store)
	if err != nil {
		return nil, AddOutput{}, err
	}
	md, err := metadataDoc(in.Metadata)
	if err != nil {
		return nil, AddOutput{}, err
	}
	rec := contexts.AddRecord{TextPayload: &in.Text, Role: optional(in.Role), Embedding: in.Embedding, ExternalID: optional(in.ExternalID),
		SessionID: optional(in.SessionID), BotID: optional(in.BotID), Metadata: md, Relationships: in.Relationships, ExpiresAt: in.ExpiresAt}
	res, err := t.c.AddContextRecords(ctx, store, []contexts.AddRecord{rec}, false)
	if err != nil {
		return nil, AddOutput{}, err
	}
	if len(res.IDs) != 1 {
		return nil, AddOutput{}, fmt.Errorf("the server answered %d ids for one record", len(res.IDs))
	}
	return nil, AddOutput{ID: res.IDs[0]}, nil
}

// UpdateInput is context_update's input.
type UpdateInput struct {
	Ref
	Metadata        map[string]any `json:"metadata,omitempty" jsonschema:"replaces the record's metadata"`
	Embedding       []float32      `json:"embedding,omitempty"`
	LifecycleStatus string         `json:"lifecycle_status,omitempty" jsonschema:"active, contradicted, or any other status (which hides the record)"`
	ExpiresAt       *time.Time     `json:"expires_at,omitempty"`
}

func (t *tools) update(ctx context.Context, _ *mcp.CallToolRequest, in UpdateInput) (*mcp.CallToolResult, any, error) {
	store, req, err := t.target(in.Ref)
	if err != nil {
		return nil, nil, err
	}
	if req.Patch.Metadata, err = metadataDoc(in.Metadata); err != nil {
		return nil, nil, err
	}
	req.Patch.Embedding, req.Patch.LifecycleStatus, req.Patch.ExpiresAt = in.Embedding, optional(in.LifecycleStatus), in.ExpiresAt
	res, err := t.c.UpdateContextRecord(ctx, store, req, false)
	return nil, res, err
}

// SearchInput is context_search's input.
type SearchInput struct {
	Store          string         `json:"store,omitempty" jsonschema:"the context store (default: the server's --store)"`
	Vector         []float32      `json:"vector" jsonschema:"the query vector"`
	Limit          int            `json:"limit,omitempty" jsonschema:"results (default 10)"`
	Filters        map[string]any `json:"filters,omitempty" jsonschema:"built-in fields (role, session_id, bot_id, ...) and metadata keys by equality"`
	IncludeRetired bool           `json:"include_retired,omitempty"`
	IncludeExpired bool           `json:"include_expired,omitempty"`
}

func limitOf(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

func (t *tools) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, any, error) {
	store, err := t.storeOf(in.Store)
	if err != nil {
		return nil, nil, err
	}
	filters, err := metadataDoc(in.Filters)
	if err != nil {
		return nil, nil, err
	}
	res, err := t.c.SearchContext(ctx, store, contexts.SearchRequest{Query: in.Vector, Limit: limitOf(in.Limit), Filters: filters,
		IncludeRetired: in.IncludeRetired, IncludeExpired: in.IncludeExpired})
	return nil, contexts.SearchResponse{Results: res}, err
}

// RetrieveInput is context_retrieve's input.
type RetrieveInput struct {
	Store          string         `json:"store,omitempty" jsonschema:"the context store (default: the server's --store)"`
	Text           string         `json:"text,omitempty" jsonschema:"the text query"`
	Vector         []float32      `json:"vector,omitempty" jsonschema:"the query vector"`
	Limit          int            `json:"limit,omitempty" jsonschema:"results (default 10)"`
	Filters        map[string]any `json:"filters,omitempty"`
	IncludeRetired bool           `json:"include_retired,omitempty"`
	IncludeExpired bool           `json:"include_expired,omitempty"`
}

func (t *tools) retrieve(ctx context.Context, _ *mcp.CallToolRequest, in RetrieveInput) (*mcp.CallToolResult, any, error) {
	store, err := t.storeOf(in.Store)
	if err != nil {
		return nil, nil, err
	}
	filters, err := metadataDoc(in.Filters)
	if err != nil {
		return nil, nil, err
	}
	res, err := t.c.RetrieveContext(ctx, store, contexts.RetrieveRequest{Text: optional(in.Text), Vector: in.Vector, Limit: limitOf(in.Limit),
		Filters: filters, IncludeRetired: in.IncludeRetired, IncludeExpired: in.IncludeExpired})
	return nil, contexts.RetrieveResponse{Results: res}, err
}

func (t *tools) get(ctx context.Context, _ *mcp.CallToolRequest, in Ref) (*mcp.CallToolResult, any, error) {
	store, req, err := t.target(in)
	if err != nil {
		return nil, nil, err
	}
	rec, err := t.record(ctx, store, req)
	return nil, contexts.RecordResponse{Record: rec}, err
}

// record reads the record req names (by id or external id); nil when there is none.
func (t *tools) record(ctx context.Context, store string, req contexts.UpdateRequest) (*contexts.Record, error) {
	if req.ID != nil {
		return t.c.ContextRecord(ctx, store, *req.ID)
	}
	return t.c.ContextRecordByExternalID(ctx, store, *req.ExternalID)
}

// RelateInput is context_relate's input.
type RelateInput struct {
	Ref
	TargetID string   `json:"target_id" jsonschema:"what the record relates to"`
	Relation string   `json:"relation" jsonschema:"the kind of relation, e.g. cites, contradicts, follows"`
	Weight   *float32 `json:"weight,omitempty"`
}

// relate adds a relationship: the record's successor holds its relationships and the new one.
func (t *tools) relate(ctx context.Context, _ *mcp.CallToolRequest, in RelateInput) (*mcp.CallToolResult, any, error) {
	store, req, err := t.target(in.Ref)
	if err != nil {
		return nil, nil, err
	}
	cur, err := t.record(ctx, store, req)
	if err != nil {
		return nil, nil, err
	}
	if cur == nil {
		return nil, nil, errors.New("no such record")
	}
	rels := append(append([]contexts.Relationship(nil), cur.Relationships...), contexts.Relationship{TargetID: in.TargetID, Relation: in.Relation, Weight: in.Weight})
	req.Patch.Relationships = &rels
	res, err := t.c.UpdateContextRecord(ctx, store, req, false)
	return nil, res, err
}

// RetireInput is context_retire's input.
type RetireInput struct {
	Ref
	Reason string `json:"reason,omitempty" jsonschema:"why the record no longer holds"`
}

func (t *tools) retire(ctx context.Context, _ *mcp.CallToolRequest, in RetireInput) (*mcp.CallToolResult, any, error) {
	store, req, err := t.target(in.Ref)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now().UTC()
	req.Patch.RetiredAt, req.Patch.RetiredReason = &now, optional(in.Reason)
	res, err := t.c.UpdateContextRecord(ctx, store, req, false)
	return nil, res, err
}

// HTTPHandler serves s over MCP's streamable HTTP transport (one server for every session).
func HTTPHandler(s *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}
