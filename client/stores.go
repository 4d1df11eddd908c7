// Store registry calls: create, describe, list and delete stores of every kind.
package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// Store describes a store.
type Store struct {
	Name    string          `json:"name"`
	URI     string          `json:"uri"`
	Version *uint64         `json:"version,omitempty"` // base-table version (describe only)
	Schema  json.RawMessage `json:"schema,omitempty"`  // generic stores: the declared schema
}

// CreateOptions are the optional parts of a store definition.
type CreateOptions struct {
	// Schema is a generic store's declared schema (required for generic stores; see the API
	// reference), ignored for rollout stores.
	Schema json.RawMessage
	// StorageOptions are passed through to the store's definition.
	StorageOptions map[string]string
	// SealOnAdd (generic stores) seals after every add, so rows are visible to every worker at once.
	SealOnAdd bool
	// EmbeddingDim (context stores), when set, is the length of every embedding and query vector.
	EmbeddingDim int
	// DistanceMetric (context stores): l2 (the default), cosine or dot.
	DistanceMetric string
}

// CreateStore creates a store, idempotently (it sends exist_ok): creating a store that exists
// with the same definition succeeds (created = false); a different definition is a 409 *Error.
func (c *Client) CreateStore(ctx context.Context, kind Kind, name string, opts CreateOptions) (store Store, created bool, err error) {
	body := map[string]any{"name": name, "exist_ok": true} // idempotent: the same store is not an error
	if len(opts.StorageOptions) > 0 {
		body["storage_options"] = opts.StorageOptions
	}
	if kind == KindContext {
		if opts.EmbeddingDim > 0 {
			body["embedding_dim"] = opts.EmbeddingDim
		}
		if opts.DistanceMetric != "" {
			body["distance_metric"] = opts.DistanceMetric
		}
	}
	if kind == KindGeneric {
		body["schema"] = opts.Schema
		if opts.SealOnAdd {
			body["seal_on_add"] = true
		}
	}
	resp, err := c.doJSONStatus(ctx, request{method: http.MethodPost, path: "/api/v1/" + collection(kind)}, body, &store)
	return store, resp == http.StatusCreated, err
}

// GetStore describes one store (404 *Error when unknown).
func (c *Client) GetStore(ctx context.Context, kind Kind, name string) (Store, error) {
	var s Store
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(kind, name)}, nil, &s)
	return s, err
}

// StorePage is one page of ListStores; Next is empty on the last page.
type StorePage struct {
	Stores []Store `json:"stores"`
	Next   string  `json:"next_cursor,omitempty"`
}

// ListStores returns one page of stores whose names start with prefix, after cursor ("" for the
// first page); limit 0 takes the server default.
func (c *Client) ListStores(ctx context.Context, kind Kind, prefix, cursor string, limit int) (StorePage, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p StorePage
	if kind == KindContext { // lance-context's listing: {"contexts": [...]}
		var lp struct {
			Contexts []Store `json:"contexts"`
			Next     string  `json:"next_cursor,omitempty"`
		}
		err := c.doJSON(ctx, request{method: http.MethodGet, path: "/api/v1/" + collection(kind), query: q}, nil, &lp)
		return StorePage{Stores: lp.Contexts, Next: lp.Next}, err
	}
	err := c.doJSON(ctx, request{method: http.MethodGet, path: "/api/v1/" + collection(kind), query: q}, nil, &p)
	return p, err
}

// DeleteStore soft-deletes a store; maintenance purges its data after the grace period.
func (c *Client) DeleteStore(ctx context.Context, kind Kind, name string) error {
	return c.doJSON(ctx, request{method: http.MethodDelete, path: storePath(kind, name)}, nil, nil)
}
