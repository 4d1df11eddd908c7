// SQL over a store and batch reads: Query (lance-context's JSON answer), QueryArrow (an Arrow
// stream), QueryTo (CSV or Parquet bytes), and GetRows.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// QueryOptions refine a query.
type QueryOptions struct {
	Source string // the rows t holds: "all" (default), "base" (the base table alone) or "wal"
	Limit  int    // the most rows answered (0: the server's cap)
}

// QueryResult is a query's JSON answer.
type QueryResult struct {
	Columns      []string `json:"columns"`
	Types        []string `json:"types"`
	Rows         [][]any  `json:"rows"` // aligned with Columns
	RowCount     int      `json:"row_count"`
	Truncated    bool     `json:"truncated"` // the server's or the asked cap cut the result
	TableVersion uint64   `json:"table_version"`
}

func (o QueryOptions) body(sql string) map[string]any {
	b := map[string]any{"sql": sql}
	if o.Source != "" {
		b["source"] = o.Source
	}
	if o.Limit > 0 {
		b["limit"] = o.Limit
	}
	return b
}

// Query runs one read-only SQL statement over a snapshot of the store (the table t; records too)
// and returns its rows. A statement the server refuses is an *Error with code INVALID_SQL and
// the engine's message.
func (c *Client) Query(ctx context.Context, kind Kind, name, sql string, opts QueryOptions) (QueryResult, error) {
	var out QueryResult
	err := c.doJSON(ctx, request{method: http.MethodPost, path: storePath(kind, name, "query")}, opts.body(sql), &out)
	return out, err
}

// QueryArrow is Query with the result as Arrow record batches (released after fn returns;
// Retain one to keep it).
func (c *Client) QueryArrow(ctx context.Context, kind Kind, name, sql string, opts QueryOptions, fn func(rec arrow.RecordBatch) error) error {
	resp, err := c.postQuery(ctx, kind, name, sql, opts, "arrow")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r, err := ipc.NewReader(resp.Body)
	if err != nil {
		return fmt.Errorf("strata: read the Arrow answer: %w", err)
	}
	defer r.Release()
	for r.Next() {
		if err := fn(r.RecordBatch()); err != nil {
			return err
		}
	}
	return r.Err()
}

// QueryTo writes the result to w as format "csv" or "parquet".
func (c *Client) QueryTo(ctx context.Context, kind Kind, name, sql string, opts QueryOptions, format string, w io.Writer) error {
	if format != "csv" && format != "parquet" {
		return fmt.Errorf("strata: QueryTo writes csv or parquet, not %q", format)
	}
	resp, err := c.postQuery(ctx, kind, name, sql, opts, format)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

func (c *Client) postQuery(ctx context.Context, kind Kind, name, sql string, opts QueryOptions, format string) (*http.Response, error) {
	data, err := json.Marshal(opts.body(sql))
	if err != nil {
		return nil, err
	}
	return c.do(ctx, request{method: http.MethodPost, path: storePath(kind, name, "query"), query: url.Values{"format": {format}},
		body: bytes.NewReader(data), contentType: "application/json"})
}

// GetRows reads up to 1,024 rows (records of a rollout store) by id in one snapshot, in the order
// asked, the ids without a row left out; columns (optional) selects what is read.
func (c *Client) GetRows(ctx context.Context, kind Kind, name string, ids, columns []string) ([]json.RawMessage, error) {
	var page struct {
		Records []json.RawMessage `json:"records"`
		Rows    []json.RawMessage `json:"rows"`
	}
	body := map[string]any{"ids": ids}
	if len(columns) > 0 {
		body["columns"] = columns
	}
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: storePath(kind, name, "get-rows")}, body, &page); err != nil {
		return nil, err
	}
	return append(page.Records, page.Rows...), nil
}
