// The change feed, consumers and read tokens: Changes reads one batch after a cursor (or from a
// consumer's committed cursor), Tail follows the feed batch by batch, Commit records a
// consumer's position; CreateSnapshot takes a read token over several stores, which
// ReadOptions.Snapshot (and the Snapshot fields of the read calls) read.
package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// FeedOptions select a batch of the change feed.
type FeedOptions struct {
	Cursor   string        // start after this cursor (a previous batch's Cursor)
	Consumer string        // or from this named consumer's committed cursor
	Start    string        // with neither: "now" (default) or "earliest"
	Limit    int           // rows per batch (0: the server's default, 1,000)
	Wait     time.Duration // long-poll up to this long for the first row (at most 60s)
	Columns  []string      // columns (default all; the id always)
	// CompleteBy and GroupSize ask for complete groups: rows with equal CompleteBy values come
	// out together once GroupSize distinct ids have them (or, after GroupTimeout, flagged
	// incomplete).
	CompleteBy   string
	GroupSize    int
	GroupTimeout time.Duration
}

// FeedBatch is one batch of the feed.
type FeedBatch struct {
	// Rows are the rows, each with "_seq", "_op" ("upsert" or "delete") and, for grouped feeds,
	// "_complete".
	Rows   []map[string]any
	Cursor string // the position after this batch: commit it once the batch is processed
	Groups int
}

// FeedRestart is where a consumer whose position expired (410 CURSOR_EXPIRED) starts again:
// read the store's base table at TableVersion, then the feed from Cursor.
type FeedRestart struct {
	TableVersion uint64 `json:"table_version"`
	Cursor       string `json:"cursor"`
}

// Consumer is a named consumer of a store's change feed.
type Consumer struct {
	Name           string    `json:"name"`
	Cursor         string    `json:"cursor"`
	CreatedAt      time.Time `json:"created_at"`
	CommittedAt    time.Time `json:"committed_at"`
	LagGenerations *int      `json:"lag_generations,omitempty"`
	LagSeconds     *float64  `json:"lag_seconds,omitempty"`
}

func (o FeedOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("cursor", o.Cursor)
	set("consumer", o.Consumer)
	set("start", o.Start)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Wait > 0 {
		q.Set("wait", o.Wait.String())
	}
	set("columns", strings.Join(o.Columns, ","))
	if o.CompleteBy != "" {
		set("complete_by", o.CompleteBy)
		q.Set("group_size", strconv.Itoa(o.GroupSize))
		if o.GroupTimeout > 0 {
			q.Set("group_timeout", o.GroupTimeout.String())
		}
	}
	return q
}

// Changes reads the batch after opts' position (an empty batch when nothing came within Wait).
func (c *Client) Changes(ctx context.Context, kind Kind, name string, opts FeedOptions) (FeedBatch, error) {
	q := opts.query()
	q.Set("format", "jsonl")
	resp, err := c.do(ctx, request{method: http.MethodGet, path: storePath(kind, name, "changes"), query: q})
	if err != nil {
		return FeedBatch{}, err
	}
	defer resp.Body.Close()
	var b FeedBatch
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return FeedBatch{}, fmt.Errorf("strata: a change-feed line: %w", err)
		}
		if cur, ok := row["_cursor"].(string); ok {
			b.Cursor = cur
			if g, ok := row["_groups"].(float64); ok {
				b.Groups = int(g)
			}
			continue
		}
		b.Rows = append(b.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return FeedBatch{}, err
	}
	if b.Cursor == "" {
		return FeedBatch{}, errors.New("strata: the change-feed answer ended without its cursor")
	}
	return b, nil
}

// Tail follows the feed from opts' position: fn gets every non-empty batch; with a consumer,
// each batch is committed after fn returns nil. It returns fn's first error or ctx's.
func (c *Client) Tail(ctx context.Context, kind Kind, name string, opts FeedOptions, fn func(FeedBatch) error) error {
	if opts.Wait == 0 {
		opts.Wait = 30 * time.Second
	}
	for {
		b, err := c.Changes(ctx, kind, name, opts)
		if err != nil {
			return err
		}
		if len(b.Rows) > 0 {
			if err := fn(b); err != nil {
				return err
			}
			if opts.Consumer != "" {
				if err := c.Commit(ctx, kind, name, opts.Consumer, b.Cursor); err != nil {
					return err
				}
			}
		}
		if opts.Consumer == "" {
			opts.Cursor, opts.Start = b.Cursor, ""
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// CreateConsumer registers a named consumer at the feed's end (start "now" or "") or its oldest
// held rows ("earliest").
func (c *Client) CreateConsumer(ctx context.Context, kind Kind, name, consumer, start string) (Consumer, error) {
	var out Consumer
	body := map[string]any{"name": consumer}
	if start != "" {
		body["start"] = start
	}
	err := c.doJSON(ctx, request{method: http.MethodPost, path: storePath(kind, name, "consumers")}, body, &out)
	return out, err
}

// Consumers lists a store's consumers with their lag.
func (c *Client) Consumers(ctx context.Context, kind Kind, name string) ([]Consumer, error) {
	var out struct {
		Consumers []Consumer `json:"consumers"`
	}
	err := c.doJSON(ctx, request{method: http.MethodGet, path: storePath(kind, name, "consumers")}, nil, &out)
	return out.Consumers, err
}

// Commit records cursor as the consumer's position.
func (c *Client) Commit(ctx context.Context, kind Kind, name, consumer, cursor string) error {
	return c.doJSON(ctx, request{method: http.MethodPost, path: storePath(kind, name, "consumers", consumer, "commit")}, map[string]any{"cursor": cursor}, nil)
}

// DeleteConsumer drops a consumer.
func (c *Client) DeleteConsumer(ctx context.Context, kind Kind, name, consumer string) error {
	return c.doJSON(ctx, request{method: http.MethodDelete, path: storePath(kind, name, "consumers", consumer)}, nil, nil)
}

// Snapshot is a read token.
type Snapshot struct {
	ID         string          `json:"id"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	StoreCount int             `json:"store_count"`
	Stores     []SnapshotStore `json:"stores,omitempty"`
}

// SnapshotStore is one store's cut in a read token.
type SnapshotStore struct {
	Store        string            `json:"store"`
	TableVersion uint64            `json:"table_version"`
	Generations  map[string]uint64 `json:"generations,omitempty"`
}

// CreateSnapshot takes a read token over stores ("kind/name": "rollout/a", "generic/b") readable
// for ttl (0: the server's default, 24h).
func (c *Client) CreateSnapshot(ctx context.Context, stores []string, ttl time.Duration) (Snapshot, error) {
	body := map[string]any{"stores": stores}
	if ttl > 0 {
		body["ttl"] = ttl.String()
	}
	var out Snapshot
	err := c.doJSON(ctx, request{method: http.MethodPost, path: "/api/v1/snapshots"}, body, &out)
	return out, err
}

// Snapshots lists the live read tokens.
func (c *Client) Snapshots(ctx context.Context) ([]Snapshot, error) {
	var out struct {
		Snapshots []Snapshot `json:"snapshots"`
	}
	err := c.doJSON(ctx, request{method: http.MethodGet, path: "/api/v1/snapshots"}, nil, &out)
	return out.Snapshots, err
}

// DeleteSnapshot releases a read token.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	return c.doJSON(ctx, request{method: http.MethodDelete, path: "/api/v1/snapshots/" + url.PathEscape(id)}, nil, nil)
}
