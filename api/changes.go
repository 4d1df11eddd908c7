// The change feed: GET /api/v1/{kind}/{name}/changes answers the rows that became visible
// (sealed) after a cursor, a batch at a time (storage/lsm's feed.go), long-polling up to ?wait
// for the first row; as JSON lines (the default), an Arrow IPC stream, or server-sent events
// that keep delivering batches.
//
// Where a batch starts: ?cursor= (a cursor a previous batch returned), ?consumer= (a named
// consumer's committed cursor, consumers.go), or neither: ?start=now (the default: what is
// sealed from now on) or ?start=earliest (the oldest rows the feed still holds). Every answer
// carries the cursor after it: the last JSON line {"_cursor": …}, the Arrow schema's metadata
// "strata.feed.cursor", each server-sent event's id; and the X-Feed-Cursor header when it is
// short enough for one. Complete groups: ?complete_by=<column>&group_size=N[&group_timeout=…].
package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/lsm"
)

// Feed bounds.
const (
	maxFeedWait      = 60 * time.Second // one long poll
	maxFeedStream    = 10 * time.Minute // one server-sent event stream (the request deadline may end it first)
	maxFeedGroupSize = 100_000
	// maxFeedHeaderCursor: a cursor longer than this (a grouped feed holding many rows) is sent
	// only in the body.
	maxFeedHeaderCursor = 8 << 10
	// HeaderFeedCursor carries the cursor after a batch.
	HeaderFeedCursor = "X-Feed-Cursor"
	// FeedCursorMetadata is the Arrow schema metadata key holding the cursor after a batch.
	FeedCursorMetadata = "strata.feed.cursor"
	mimeNDJSON         = "application/x-ndjson"
	mimeEventStream    = "text/event-stream"
)

// feedRequest is a parsed changes request.
type feedRequest struct {
	opts     lsm.FeedOptions
	wait     time.Duration
	format   string // jsonl, arrow, sse
	cursor   string
	consumer string
	start    string
}

func parseFeedRequest(c echo.Context) (feedRequest, error) {
	q := c.QueryParams()
	r := feedRequest{cursor: q.Get("cursor"), consumer: q.Get("consumer"), start: q.Get("start"), format: q.Get("format")}
	if r.cursor != "" && r.consumer != "" {
		return r, invalid("cursor and consumer are exclusive: a consumer resumes from its committed cursor")
	}
	if last := c.Request().Header.Get("Last-Event-ID"); last != "" && r.cursor == "" && r.consumer == "" {
		r.cursor = last // an EventSource reconnecting
	}
	switch r.start {
	case "", "now", "earliest":
	default:
		return r, invalid("start must be now or earliest, not %q", r.start)
	}
	var err error
	if r.opts.Limit, err = intParam(q.Get("limit"), lsm.DefaultFeedLimit, 1, lsm.MaxFeedLimit, "limit"); err != nil {
		return r, err
	}
	if r.wait, err = durationParam(q.Get("wait"), 0, maxFeedWait, "wait"); err != nil {
		return r, err
	}
	if cols := q.Get("columns"); cols != "" {
		r.opts.Columns = strings.Split(cols, ",")
	}
	if by := q.Get("complete_by"); by != "" {
		g := &lsm.FeedGroups{Column: by}
		if g.Size, err = intParam(q.Get("group_size"), 0, 1, maxFeedGroupSize, "group_size"); err != nil {
			return r, err
		}
		if g.Size == 0 {
			return r, invalid("complete_by needs group_size (the rows that make a group complete)")
		}
		if g.Timeout, err = durationParam(q.Get("group_timeout"), 0, 7*24*time.Hour, "group_timeout"); err != nil {
			return r, err
		}
		if g.MaxHeld, err = intParam(q.Get("max_held"), lsm.DefaultFeedMaxHeld, 1, 100_000, "max_held"); err != nil {
			return r, err
		}
		r.opts.Groups = g
	} else if q.Get("group_size") != "" || q.Get("group_timeout") != "" {
		return r, invalid("group_size and group_timeout need complete_by (the column that groups rows)")
	}
	switch {
	case r.format == "" && strings.Contains(c.Request().Header.Get(echo.HeaderAccept), mimeEventStream):
		r.format = "sse"
	case r.format == "" && wantsArrow(c):
		r.format = "arrow"
	case r.format == "":
		r.format = "jsonl"
	case r.format != "jsonl" && r.format != "arrow" && r.format != "sse":
		return r, invalid("format must be jsonl, arrow or sse, not %q", r.format)
	}
	return r, nil
}

// intParam parses an integer query parameter within [lo, hi] (def when absent).
func intParam(v string, def, lo, hi int, name string) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, invalid("%s must be an integer from %d to %d, not %q", name, lo, hi, v)
	}
	return n, nil
}

// durationParam parses a duration query parameter ("30s", "5m", or seconds as a number) within
// [0, hi] (def when absent).
func durationParam(v string, def, hi time.Duration, name string) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || secs != secs {
			return 0, invalid("%s must be a duration (30s, 5m) or seconds, not %q", name, v)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 || d > hi {
		return 0, invalid("%s must be from 0 to %s, not %q", name, hi, v)
	}
	return d, nil
}

func (h *handlers) changes(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		req, err := parseFeedRequest(c)
		if err != nil {
			return err
		}
		return h.withStoreEntry(c, kind, func(s *lsm.Store, st catalog.Store) error {
			ctx := c.Request().Context()
			if len(req.opts.Columns) == 0 {
				cols, err := feedColumns(s, st, kind)
				if err != nil {
					return err
				}
				req.opts.Columns = cols
			}
			cur, err := h.feedStart(ctx, kind, c.Param("name"), s, req)
			if err != nil {
				return err
			}
			if req.format == "sse" {
				return h.streamChanges(c, kind, s, cur, req)
			}
			b, err := h.pollChanges(ctx, kind, c.Param("name"), s, cur, req.opts, req.wait)
			if err != nil {
				h.countExpired(err)
				return err
			}
			defer b.Release()
			h.observeFeed(kind, b)
			if req.format == "arrow" {
				return writeFeedArrow(c, s, req.opts, b, h)
			}
			return writeFeedJSONLines(c, kind, s, b)
		})
	}
}

// feedStart is the cursor a request starts from.
func (h *handlers) feedStart(ctx context.Context, kind catalog.Kind, name string, s *lsm.Store, req feedRequest) (lsm.FeedCursor, error) {
	switch {
	case req.consumer != "":
		cs, err := h.deps.Stores.Catalog().GetConsumer(ctx, kind, name, req.consumer)
		if err != nil {
			return lsm.FeedCursor{}, err
		}
		return parseCursor(cs.Cursor)
	case req.cursor != "":
		return parseCursor(req.cursor)
	case req.start == "earliest":
		return s.FeedEarliest(ctx)
	}
	return s.FeedHead(ctx)
}

// feedColumns are the columns a batch returns when the request names none: every user column but
// blobs (rollouts' and contexts' binary_payload, a generic store's blob columns), as listings.
func feedColumns(s *lsm.Store, st catalog.Store, kind catalog.Kind) ([]string, error) {
	switch kind {
	case catalog.KindRollout, catalog.KindGeneric:
		return rowColumns(s, st, kind, nil)
	case catalog.KindContext:
		return columnsExcept(s, map[string]bool{"binary_payload": true}), nil
	}
	return nil, nil
}

func parseCursor(s string) (lsm.FeedCursor, error) {
	cur, err := lsm.ParseFeedCursor(s)
	if err != nil {
		return lsm.FeedCursor{}, invalid("cursor: %v", err)
	}
	return cur, nil
}

// pollChanges reads the batch after cur, and while it is empty and wait has not passed, reads
// again at the store's next seal this process hears of (its own, or another worker's through
// the catalog's seal notifications) or after FeedPollInterval, whichever comes first (a
// notification is a hint: rows sealed on any worker show up in the shard manifests a read lists).
// An empty batch after wait is an answer, not an error; so is one cut short by the request ending.
func (h *handlers) pollChanges(ctx context.Context, kind catalog.Kind, name string, s *lsm.Store, cur lsm.FeedCursor, opts lsm.FeedOptions, wait time.Duration) (lsm.FeedBatch, error) {
	deadline := time.Now().Add(wait)
	for {
		sealed := h.deps.Stores.WaitSealed(kind, name) // before the read: a seal during it wakes the wait
		opts.Now = time.Now()
		b, err := s.Changes(ctx, cur, opts)
		if err != nil {
			if ctx.Err() != nil && wait > 0 {
				return lsm.FeedBatch{Next: cur}, nil
			}
			return lsm.FeedBatch{}, err
		}
		if b.Rows != nil || !time.Now().Before(deadline) {
			return b, nil
		}
		cur = b.Next
		t := time.NewTimer(min(h.deps.FeedPollInterval, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return lsm.FeedBatch{Next: cur}, nil
		case <-sealed:
			t.Stop()
		case <-t.C:
		}
	}
}

// writeFeedJSONLines answers one JSON object per row, then {"_cursor", "_rows", "_groups"}.
func writeFeedJSONLines(c echo.Context, kind catalog.Kind, s *lsm.Store, b lsm.FeedBatch) error {
	res := c.Response()
	next := b.Next.String()
	if len(next) <= maxFeedHeaderCursor {
		res.Header().Set(HeaderFeedCursor, next)
	}
	res.Header().Set(echo.HeaderContentType, mimeNDJSON)
	res.WriteHeader(http.StatusOK)
	w := bufio.NewWriterSize(res, 64<<10)
	rows := 0
	if b.Rows != nil {
		rows = int(b.Rows.NumRows())
		writeFeedRows(w, feedCodec(kind, s), b.Rows, "", "\n")
	}
	tail, _ := json.Marshal(map[string]any{"_cursor": next, "_rows": rows, "_groups": b.Groups})
	w.Write(tail)
	w.WriteByte('\n')
	return w.Flush()
}

// writeFeedRows writes rec's rows as JSON objects, between rows sep, after each one end.
func writeFeedRows(w *bufio.Writer, cd codec, rec arrow.RecordBatch, sep, end string) {
	e := cd.newRowEncoder(rec, nil)
	buf := make([]byte, 0, 64<<10)
	for i := 0; i < int(rec.NumRows()); i++ {
		if i > 0 {
			buf = append(buf, sep...)
		}
		buf = e.appendRow(buf, i)
		buf = append(buf, end...)
		if len(buf) >= 32<<10 {
			w.Write(buf)
			buf = buf[:0]
		}
	}
	w.Write(buf)
}

// feedCodec is how a kind's rows are written as JSON.
func feedCodec(kind catalog.Kind, s *lsm.Store) codec {
	if kind == catalog.KindRollout {
		return rolloutCodec
	}
	return genericCodec(s)
}

// writeFeedArrow answers the batch as an Arrow IPC stream (schema only when empty), the cursor in
// the schema's metadata.
func writeFeedArrow(c echo.Context, s *lsm.Store, opts lsm.FeedOptions, b lsm.FeedBatch, h *handlers) error {
	schema, err := s.FeedSchema(opts)
	if err != nil {
		return err
	}
	next := b.Next.String()
	md := arrow.NewMetadata([]string{FeedCursorMetadata}, []string{next})
	schema = arrow.NewSchema(schema.Fields(), &md)
	res := c.Response()
	if len(next) <= maxFeedHeaderCursor {
		res.Header().Set(HeaderFeedCursor, next)
	}
	res.Header().Set(echo.HeaderContentType, MIMEArrowStream)
	res.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(res, 64<<10)
	w := ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(h.mem))
	if b.Rows != nil {
		rec := array.NewRecordBatch(schema, b.Rows.Columns(), b.Rows.NumRows())
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// streamChanges answers server-sent events: each non-empty batch as an event "rows" whose data
// is {"rows": [...], "cursor", "groups"} and whose id is the cursor (an EventSource reconnects
// with it as Last-Event-ID), and a comment line while idle, until the client leaves, wait (or
// maxFeedStream) passes, or the request's deadline ends it.
func (h *handlers) streamChanges(c echo.Context, kind catalog.Kind, s *lsm.Store, cur lsm.FeedCursor, req feedRequest) error {
	ctx := c.Request().Context()
	life := req.wait
	if life <= 0 {
		life = maxFeedStream
	}
	end := time.Now().Add(min(life, maxFeedStream))
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, mimeEventStream)
	res.Header().Set("Cache-Control", "no-cache")
	res.WriteHeader(http.StatusOK)
	w := bufio.NewWriterSize(res, 64<<10)
	cd := feedCodec(kind, s)
	for time.Now().Before(end) {
		b, err := h.pollChanges(ctx, kind, c.Param("name"), s, cur, req.opts, min(time.Until(end), 15*time.Second))
		if err != nil {
			h.countExpired(err)
			writeSSEError(w, err)
			_ = w.Flush()
			return nil // the status is sent: the error is the last event
		}
		if ctx.Err() != nil {
			b.Release()
			return nil
		}
		cur = b.Next
		if b.Rows == nil {
			w.WriteString(": idle\n\n")
		} else {
			h.observeFeed(kind, b)
			next := cur.String()
			w.WriteString("event: rows\nid: " + next + "\ndata: {\"rows\":[")
			writeFeedRows(w, cd, b.Rows, ",", "")
			fmt.Fprintf(w, "],\"cursor\":%q,\"groups\":%d}\n\n", next, b.Groups)
		}
		b.Release()
		if err := w.Flush(); err != nil {
			return nil // the client left
		}
		res.Flush()
	}
	return nil
}

// writeSSEError writes err as an event "error" with the JSON error envelope.
func writeSSEError(w *bufio.Writer, err error) {
	e := errorFor(err)
	body, _ := json.Marshal(ErrorBody{Error: ErrorDetail{Code: e.Code, Message: e.Message, Restart: e.Restart}})
	w.WriteString("event: error\ndata: ")
	w.Write(body)
	w.WriteString("\n\n")
}

// feedMetrics count what the feed delivers and how far behind its consumers are. The lag is a
// histogram by kind, observed at each commit, not a gauge per consumer: stores and consumers are
// unbounded, series must not be (GET …/consumers answers each consumer's own lag).
type feedMetrics struct {
	rows    *prometheus.CounterVec
	lag     *prometheus.HistogramVec
	expired prometheus.Counter
}

func newFeedMetrics(reg prometheus.Registerer) *feedMetrics {
	m := &feedMetrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_feed_rows_total", Help: "Rows delivered by change feeds, by store kind."}, []string{"kind"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_feed_consumer_lag_seconds",
			Help:    "How long ago the oldest generation a named consumer had not read was sealed, observed at each commit, by store kind.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 12)}, []string{"kind"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_feed_cursor_expired_total", Help: "Change-feed reads answered 410 CURSOR_EXPIRED (the position's generations were released)."}),
	}
	reg.MustRegister(m.rows, m.lag, m.expired)
	return m
}

// countExpired counts a read answered 410 CURSOR_EXPIRED.
func (h *handlers) countExpired(err error) {
	var expired *lsm.FeedExpiredError
	if errors.As(err, &expired) {
		h.feed.expired.Inc()
	}
}

// observeFeed records a delivered batch.
func (h *handlers) observeFeed(kind catalog.Kind, b lsm.FeedBatch) {
	if b.Rows != nil {
		h.feed.rows.WithLabelValues(string(kind)).Add(float64(b.Rows.NumRows()))
	}
}
