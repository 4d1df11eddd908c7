// Row calls: append (JSON rows or an Arrow IPC stream), get, scan with keyset pagination, delete
// and flush. Rollout stores call their rows "records"; the client uses "rows" for both kinds.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MIMEArrowStream is the media type of Arrow IPC stream bodies.
const MIMEArrowStream = "application/vnd.apache.arrow.stream"

// ErrRowNotFound is returned by Get when the store has no row with that id.
var ErrRowNotFound = errors.New("strata: row not found")

// AppendResult answers an append.
type AppendResult struct {
	Version uint64   `json:"version"` // base-table version when the append was acknowledged
	IDs     []string `json:"ids,omitempty"`
	Count   int      `json:"count"`
}

// Append appends JSON rows (objects keyed by column name; a datagen store's rows are events).
// Rows are durable when it returns; with flush they are also sealed, so every worker reads them
// at once (datagen appends are always sealed).
// Rows are sent as they are (the server validates them), not re-encoded.
func (c *Client) Append(ctx context.Context, kind Kind, name string, rows []json.RawMessage, flush bool) (AppendResult, error) {
	size := 16
	for _, r := range rows {
		size += len(r) + 1
	}
	body := make([]byte, 0, size)
	body = append(body, `{"`+rowsField(kind)+`":[`...)
	for i, r := range rows {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, r...)
	}
	body = append(body, "]}"...)
	var res AppendResult
	_, err := c.doJSONStatus(ctx, request{method: http.MethodPost, path: storePath(kind, name, rowsField(kind)), query: flushQuery(flush),
		body: bytes.NewReader(body), contentType: "application/json"}, nil, &res)
	return res, err
}

// AppendArrow appends one record batch as an Arrow IPC stream (rollout stores). Columns the
// store fills by default (role, created_at, ...) may be left out.
func (c *Client) AppendArrow(ctx context.Context, kind Kind, name string, rec arrow.RecordBatch, flush bool) (AppendResult, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Write(rec); err != nil {
		return AppendResult{}, err
	}
	if err := w.Close(); err != nil {
		return AppendResult{}, err
	}
	var res AppendResult
	resp, err := c.do(ctx, request{method: http.MethodPost, path: storePath(kind, name, rowsField(kind)),
		query: flushQuery(flush), body: &buf, contentType: MIMEArrowStream})
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	return res, json.NewDecoder(resp.Body).Decode(&res)
}

func flushQuery(flush bool) url.Values {
	if !flush {
		return nil
	}
	return url.Values{"flush": {"true"}}
}

// Get returns one row as a JSON object, or ErrRowNotFound.
func (c *Client) Get(ctx context.Context, kind Kind, name, id string) (json.RawMessage, error) {
	if kind == KindRollout {
		var r struct {
			Record json.RawMessage `json:"record"`
		}
		if err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(kind, name, "records", id)}, nil, &r); err != nil {
			return nil, err
		}
		if len(r.Record) == 0 || string(r.Record) == "null" {
			return nil, fmt.Errorf("%w: %s/%s %q", ErrRowNotFound, kind, name, id)
		}
		return r.Record, nil
	}
	var row json.RawMessage
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(kind, name, "rows", id)}, nil, &row)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusNotFound && strings.HasPrefix(e.Message, "row ") {
		return nil, fmt.Errorf("%w: %s/%s %q", ErrRowNotFound, kind, name, id)
	}
	return row, err
}

// ScanOptions narrow a scan.
type ScanOptions struct {
	// Filter is a SQL predicate over the store's columns, e.g. `step > 5 AND role = 'user'`
	// (comparisons, AND/OR/NOT, IN, BETWEEN, IS [NOT] NULL, LIKE), or a JSON object of column
	// equalities, e.g. {"rollout_id": "r1"}; sent as it is.
	Filter json.RawMessage
	// PageSize is the rows fetched per request (default 1000, at most 10,000).
	PageSize int
	// Limit stops the scan after this many rows (0 = all).
	Limit int
	// Version reads a retained base-table version (rollout stores; read-only, without the WAL).
	Version uint64
	// Snapshot reads a read token's cut of the store (CreateSnapshot): the same rows on any
	// worker until the token expires (rollout and generic stores).
	Snapshot string
}

func (o ScanOptions) query(kind Kind, cursor string, pageSize int) url.Values {
	q := url.Values{"limit": {strconv.Itoa(pageSize)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if len(o.Filter) > 0 {
		if kind == KindRollout {
			q.Set("filters", string(o.Filter))
		} else {
			q.Set("filter", string(o.Filter))
		}
	}
	if o.Version > 0 {
		q.Set("version", strconv.FormatUint(o.Version, 10))
	}
	if o.Snapshot != "" {
		q.Set("snapshot", o.Snapshot)
	}
	return q
}

func (o ScanOptions) pageSize(seen int) int {
	n := o.PageSize
	if n <= 0 {
		n = 1000
	}
	n = min(n, 10_000)
	if o.Limit > 0 {
		n = min(n, o.Limit-seen)
	}
	return n
}

// Scan calls fn with every row in key order (newest version of each id, deletes applied),
// following the keyset cursor page by page. An error from fn stops the scan and is returned.
func (c *Client) Scan(ctx context.Context, kind Kind, name string, opts ScanOptions, fn func(row json.RawMessage) error) error {
	cursor, seen := "", 0
	for {
		n := opts.pageSize(seen)
		if n <= 0 {
			return nil
		}
		var page struct {
			Records []json.RawMessage `json:"records"`
			Rows    []json.RawMessage `json:"rows"`
			Next    string            `json:"next_cursor"`
		}
		err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(kind, name, rowsField(kind)),
			query: opts.query(kind, cursor, n)}, nil, &page)
		if err != nil {
			return err
		}
		for _, r := range append(page.Records, page.Rows...) {
			if err := fn(r); err != nil {
				return err
			}
			seen++
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}

// ScanArrow is Scan for rollout stores with Arrow IPC pages: fn gets one record batch per page
// (released after fn returns; Retain it to keep it).
func (c *Client) ScanArrow(ctx context.Context, kind Kind, name string, opts ScanOptions, fn func(rec arrow.RecordBatch) error) error {
	if kind != KindRollout {
		return fmt.Errorf("strata: Arrow listings are served for rollout stores only")
	}
	cursor, seen := "", 0
	for {
		n := opts.pageSize(seen)
		if n <= 0 {
			return nil
		}
		resp, err := c.do(ctx, request{method: http.MethodGet, path: storePath(kind, name, "records"),
			query: opts.query(kind, cursor, n), accept: MIMEArrowStream})
		if err != nil {
			return err
		}
		next := resp.Header.Get("X-Next-Cursor")
		err = func() error {
			defer resp.Body.Close()
			r, err := ipc.NewReader(resp.Body)
			if err != nil {
				return fmt.Errorf("strata: read Arrow page: %w", err)
			}
			defer r.Release()
			for r.Next() {
				rec := r.RecordBatch()
				seen += int(rec.NumRows())
				if err := fn(rec); err != nil {
					return err
				}
			}
			return r.Err()
		}()
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// DeleteRow deletes one row (a tombstone; reads stop returning it at once).
func (c *Client) DeleteRow(ctx context.Context, kind Kind, name, id string) error {
	return c.doJSON(ctx, request{method: http.MethodDelete, path: storePath(kind, name, rowsField(kind), id)}, nil, nil)
}

// Flush seals the answering worker's shard of the store: its rows become visible to every worker.
func (c *Client) Flush(ctx context.Context, kind Kind, name string) error {
	return c.doJSON(ctx, request{method: http.MethodPost, path: storePath(kind, name, "flush")}, nil, nil)
}
