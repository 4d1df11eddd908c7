// The Client type: base URL, bearer tokens, and the request/response plumbing every call shares.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strata-store/strata/kinds/kind"
)

// Kind is a store kind (package kinds/kind): KindRollout, KindGeneric, KindDatagen or
// KindContext.
type Kind = kind.Kind

const (
	KindRollout = kind.Rollout
	KindGeneric = kind.Generic
	// KindDatagen stores are checkpoint event logs: their rows are events (see the datagen calls).
	KindDatagen = kind.Datagen
	// KindContext stores are agent memory: their records are added, searched and retrieved with
	// the context calls.
	KindContext = kind.Context
)

// ParseKind accepts "rollout"/"rollouts", "generic", "datagen" and "context"/"contexts".
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "rollout", "rollouts":
		return KindRollout, nil
	case "generic":
		return KindGeneric, nil
	case "datagen":
		return KindDatagen, nil
	case "context", "contexts":
		return KindContext, nil
	}
	return "", fmt.Errorf("unknown store kind %q: want rollout, generic, datagen or context", s)
}

// ParseRef splits "kind/name" (e.g. "rollout/run-7").
func ParseRef(ref string) (Kind, string, error) {
	k, name, ok := strings.Cut(ref, "/")
	if !ok || name == "" {
		return "", "", fmt.Errorf("store %q: want <kind>/<name>, e.g. rollout/run-7", ref)
	}
	parsed, err := ParseKind(k)
	return parsed, name, err
}

// collection is the URL segment of a kind's routes.
func collection(k Kind) string {
	switch k {
	case KindRollout:
		return "rollouts"
	case KindContext:
		return "contexts"
	}
	return string(k)
}

// rowsField is the JSON field holding rows in a kind's append body and list page (and the path
// segment of its append route).
func rowsField(k Kind) string {
	switch k {
	case KindRollout:
		return "records"
	case KindDatagen:
		return "events"
	}
	return "rows"
}

// Client talks to one Strata API endpoint (any worker of a cluster).
type Client struct {
	base       *url.URL
	http       *http.Client
	token      string
	adminToken string
	retries    int           // 503s with Retry-After retried per call (default 8)
	maxWait    time.Duration // the longest Retry-After honoured (default 30s)
	routes     *routeCache   // Routed's answers; shared with the clients Routed returns
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token of the data API (STRATA_API_TOKEN on the server).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithAdminToken sets the bearer token of the admin routes (maintenance triggers).
func WithAdminToken(token string) Option { return func(c *Client) { c.adminToken = token } }

// WithRetries sets how many times a call answered 503 with Retry-After (the server's
// backpressure: it wrote nothing) is retried, after the wait the server asks for (at most
// maxWait); 0 disables retries. Default 8 retries, 30 s.
func WithRetries(n int, maxWait time.Duration) Option {
	return func(c *Client) { c.retries, c.maxWait = n, maxWait }
}

// WithHTTPClient replaces the HTTP client (default: no overall timeout; use contexts).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// New returns a client of the API at baseURL, e.g. "http://127.0.0.1:3000".
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, http: &http.Client{CheckRedirect: keepTokenOnSameHost}, retries: 8, maxWait: 30 * time.Second,
		routes: &routeCache{m: map[string]routedEntry{}}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL is the API URL the client talks to.
func (c *Client) BaseURL() string { return c.base.String() }

// keepTokenOnSameHost follows a redirect (at most 10) and drops the bearer token when it leads
// to another host (or from https to http): the token is for the API's host only.
func keepTokenOnSameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("client: stopped after 10 redirects")
	}
	first := via[0].URL
	if req.URL.Host != first.Host || (first.Scheme == "https" && req.URL.Scheme != "https") {
		req.Header.Del("Authorization")
	}
	return nil
}

// Error is an error answer of the API.
type Error struct {
	Status     int           // HTTP status
	Code       string        // the envelope's code, e.g. NOT_FOUND, INVALID_ARGUMENT
	Message    string        // the envelope's message
	RetryAfter time.Duration // from Retry-After on 503s and 429s
	// Restart (410 CURSOR_EXPIRED): where a change-feed consumer can start again.
	Restart *FeedRestart
	// Quota and Tenant (429 QUOTA_EXCEEDED): the limit the append's tenant reached (rows,
	// bytes, pending_generations or append_rows_per_second).
	Quota, Tenant string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// IsNotFound reports whether err is a 404 answer (unknown store).
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// IsQuotaExceeded reports whether err is the server's 429 QUOTA_EXCEEDED (nothing was written).
func IsQuotaExceeded(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusTooManyRequests && e.Code == "QUOTA_EXCEEDED"
}

// IsConflict reports whether err is the server's 409 (the name exists).
func IsConflict(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusConflict
}

// request is one API call.
type request struct {
	method      string
	path        string // under the base URL, already escaped
	query       url.Values
	body        io.Reader
	contentType string
	accept      string
	admin       bool
}

// do sends r and returns the response when its status is 2xx; otherwise it decodes the error
// envelope into *Error. Only what cannot have taken effect is retried (WithRetries), when the body
// can be sent again: a refused connection (nothing was sent), a 503 OVERLOADED or UNAVAILABLE
// with Retry-After (the server refused the request before admitting it), and a 429 of a tenant's
// append rate quota (likewise). A request deadline's
// 503 DEADLINE_EXCEEDED, a storage fault or a dropped connection mid-request may have taken
// effect: they are returned. The caller closes the body.
func (c *Client) do(ctx context.Context, r request) (*http.Response, error) {
	if b, ok := r.body.(*bytes.Buffer); ok {
		r.body = bytes.NewReader(b.Bytes()) // replayable
	}
	seeker, replayable := r.body.(io.Seeker)
	replayable = replayable || r.body == nil
	for attempt := 0; ; attempt++ {
		resp, err := c.doOnce(ctx, r)
		wait, retry := retryable(err)
		if !retry || attempt >= c.retries || !replayable {
			return resp, err
		}
		wait = min(wait, c.maxWait)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		if seeker != nil {
			if _, serr := seeker.Seek(0, io.SeekStart); serr != nil {
				return nil, err
			}
		}
	}
}

// retryable reports whether a failed attempt cannot have taken effect, and how long to wait.
func retryable(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) {
		admittedNothing := e.Code == "OVERLOADED" || e.Code == "UNAVAILABLE"
		if e.Status == http.StatusTooManyRequests && e.Code == "QUOTA_EXCEEDED" {
			// Nothing was written; a rate quota clears within its Retry-After (the others —
			// rows, bytes, pending generations — wait for deletes or merges: the caller decides).
			return e.RetryAfter, e.Quota == "append_rows_per_second" && e.RetryAfter > 0
		}
		return e.RetryAfter, e.Status == http.StatusServiceUnavailable && e.RetryAfter > 0 && admittedNothing
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return 500 * time.Millisecond, true
	}
	return 0, false
}

// doOnce sends r once.
func (c *Client) doOnce(ctx context.Context, r request) (*http.Response, error) {
	target := c.base.String() + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, r.body)
	if err != nil {
		return nil, err
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	token := c.token
	if r.admin {
		token = c.adminToken
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	e := &Error{Status: resp.StatusCode, Code: http.StatusText(resp.StatusCode)}
	var env struct {
		Error struct {
			Code    string       `json:"code"`
			Message string       `json:"message"`
			Restart *FeedRestart `json:"restart"`
			Quota   string       `json:"quota"`
			Tenant  string       `json:"tenant"`
		} `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 2<<20))
	if json.Unmarshal(data, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message, e.Restart = env.Error.Code, env.Error.Message, env.Error.Restart
		e.Quota, e.Tenant = env.Error.Quota, env.Error.Tenant
	} else {
		e.Message = strings.TrimSpace(string(data))
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return nil, e
}

// doJSON sends in (when not nil) as JSON and decodes the answer into out (when not nil).
func (c *Client) doJSON(ctx context.Context, r request, in, out any) error {
	_, err := c.doJSONStatus(ctx, r, in, out)
	return err
}

// doJSONStatus is doJSON that also returns the (2xx) status of the answer.
func (c *Client) doJSONStatus(ctx context.Context, r request, in, out any) (int, error) {
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		r.body, r.contentType = bytes.NewReader(data), "application/json"
	}
	resp, err := c.do(ctx, r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("strata: decode %s %s answer: %w", r.method, r.path, err)
	}
	return resp.StatusCode, nil
}

// storePath is /api/v1/<collection>/<name>[/<rest>...] with each segment escaped.
func storePath(kind Kind, name string, rest ...string) string {
	p := "/api/v1/" + collection(kind) + "/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// Health is the answer of GET /api/v1/health.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	Catalog string `json:"catalog"`
}

// Health checks the worker and its catalog.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.doJSON(ctx, request{method: http.MethodGet, path: "/api/v1/health"}, nil, &h)
	return h, err
}
