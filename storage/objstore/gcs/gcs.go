// Package gcs is the Google Cloud Storage object store: gs://bucket/prefix. It is a package of its
// own, registered by importing it (the strata binary does), so that only what serves gs:// stores
// links Google's client library and its gRPC and OpenTelemetry dependencies.
//
// Put-if-absent is a write with the DoesNotExist precondition (ifGenerationMatch=0; 412 means the
// key exists); objects of ChunkThreshold bytes or more go up as a resumable upload in chunks,
// and the precondition applies to the object the upload finalizes, so exactly one of racing
// writers creates it. Every call runs under its own timeout (Options.CallTimeout) covering the
// client's retries (conditional writes are idempotent, so they are retried too), so a server that
// stops answering fails the call instead of wedging the store. GCS cannot write in place: the WAL
// uses one entry object per group commit there. Listings resume after a key with the service's
// startOffset.
//
// Credentials follow Google's conventions and never appear in URLs, errors or logs: Application
// Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, workload identity, the metadata server);
// STORAGE_EMULATOR_HOST points the client at an emulator (no credentials), as the SDK documents.
// The URL's endpoint= names another JSON API endpoint (a private or regional one).
package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/strata-store/strata/storage/objstore"
)

// Options configure a GCS store beyond what the environment says.
type Options struct {
	Bucket   string
	Prefix   string // key prefix inside the bucket ("" = the bucket's root)
	Endpoint string // the JSON API endpoint (default: Google's, or STORAGE_EMULATOR_HOST's)
	// CallTimeout bounds each call, retries included (default 30s).
	CallTimeout time.Duration
	// Objects of ChunkThreshold bytes or more (default 16 MiB) go up as a resumable upload in
	// chunks of ChunkSize bytes (default 16 MiB); smaller ones in one request.
	ChunkThreshold int64
	ChunkSize      int
}

// URLOptions are the query parameters a gs:// URL may carry.
var URLOptions = []string{"endpoint"}

// ParseURL reads gs://bucket/prefix?endpoint=..; unknown query parameters are an error.
func ParseURL(u *url.URL) (Options, error) {
	o := Options{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if o.Bucket == "" {
		return o, fmt.Errorf("objstore: %s: a gs:// URL names a bucket (gs://bucket/prefix)", u.Redacted())
	}
	if u.User != nil {
		return o, fmt.Errorf("objstore: gs://%s: credentials do not belong in a store URL (use Application Default Credentials)", o.Bucket)
	}
	if o.Prefix != "" {
		if err := objstore.Validate(o.Prefix); err != nil {
			return o, fmt.Errorf("objstore: gs://%s/%s: %w", o.Bucket, o.Prefix, err)
		}
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil || e.RawQuery != "" {
				return o, fmt.Errorf("objstore: gcs endpoint %q: want http(s)://host[:port][/path]", v)
			}
			o.Endpoint = v
		default:
			return o, fmt.Errorf("objstore: unknown gs URL option %q (known: %s)", k, strings.Join(URLOptions, ", "))
		}
	}
	return o, nil
}

// Store is an objstore.Store over a GCS bucket and prefix. Safe for concurrent use.
type Store struct {
	bucket  *storage.BucketHandle
	name    string
	prefix  string // "" or ends with "/"
	timeout time.Duration
	opts    Options
}

// New connects to the bucket o names (no request is made until the first call).
func New(ctx context.Context, o Options) (*Store, error) {
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.ChunkThreshold <= 0 {
		o.ChunkThreshold = 16 << 20
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 16 << 20
	}
	opts := []option.ClientOption{storage.WithDisabledClientMetrics()}
	if o.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(o.Endpoint))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objstore: gs://%s: GCS configuration: %w", o.Bucket, err)
	}
	// Conditional writes are idempotent: retry every call, within its timeout.
	client.SetRetry(storage.WithPolicy(storage.RetryAlways), storage.WithMaxAttempts(4))
	prefix := strings.Trim(o.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Store{bucket: client.Bucket(o.Bucket), name: o.Bucket, prefix: prefix, timeout: o.CallTimeout, opts: o}, nil
}

// Importing the package makes objstore.Open serve gs:// URLs.
func init() { objstore.Register("gs", open) }

func open(ctx context.Context, u *url.URL) (objstore.Store, error) {
	o, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	return New(ctx, o)
}

func (g *Store) key(key string) (string, error) {
	if err := objstore.Validate(key); err != nil {
		return "", err
	}
	return g.prefix + key, nil
}

// call bounds one call (all its attempts) by the store's timeout.
func (g *Store) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, g.timeout)
}

// mapErr turns the client's errors into the package's: not found, exists, or a wrapped error
// that names the operation and key (never credentials).
func (g *Store) mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("objstore: %s %s: %w", op, key, objstore.ErrNotFound)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch ge.Code {
		case http.StatusPreconditionFailed:
			return fmt.Errorf("objstore: %s %s: %w", op, key, objstore.ErrExists)
		case http.StatusNotFound:
			if !errors.Is(err, storage.ErrBucketNotExist) && !strings.Contains(strings.ToLower(ge.Message), "bucket") {
				return fmt.Errorf("objstore: %s %s: %w", op, key, objstore.ErrNotFound)
			}
		}
		return fmt.Errorf("objstore: gcs %s %s: %w: HTTP %d", op, key, objstore.ErrUnavailable, ge.Code)
	}
	return fmt.Errorf("objstore: gcs %s %s: %w: %w", op, key, objstore.ErrUnavailable, err)
}

func (g *Store) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := g.key(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := g.call(ctx)
	defer cancel()
	r, err := g.bucket.Object(k).NewReader(ctx)
	if err != nil {
		return nil, g.mapErr("get", key, err)
	}
	defer r.Close()
	return objstore.ReadBody(r, r.Attrs.Size, objstore.MaxObjectBytes, func(err error) error { return g.mapErr("get", key, err) })
}

func (g *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 0 {
		_, _, err := objstore.ClampRange(0, offset, length)
		return nil, err
	}
	if length == 0 {
		if _, err := g.Stat(ctx, key); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	k, err := g.key(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := g.call(ctx)
	defer cancel()
	r, err := g.bucket.Object(k).NewRangeReader(ctx, offset, length)
	if err != nil {
		var ge *googleapi.Error
		if errors.As(err, &ge) && ge.Code == http.StatusRequestedRangeNotSatisfiable {
			return []byte{}, nil // the offset is at or past the end: an empty range, as ClampRange cuts it
		}
		return nil, g.mapErr("get range of", key, err)
	}
	defer r.Close()
	return objstore.ReadRangeBody(r, r.Remain(), length, key, func(err error) error { return g.mapErr("get range of", key, err) })
}

func (g *Store) Put(ctx context.Context, key string, data []byte) error {
	return g.put(ctx, key, data, false)
}

func (g *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return g.put(ctx, key, data, true)
}

func (g *Store) put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	k, err := g.key(key)
	if err != nil {
		return err
	}
	obj := g.bucket.Object(k)
	if ifAbsent {
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	}
	// A large object's upload is given a timeout per chunk.
	chunks := 1 + int64(len(data))/int64(g.opts.ChunkSize)
	cctx, cancel := context.WithTimeout(ctx, g.timeout*time.Duration(chunks))
	defer cancel()
	w := obj.NewWriter(cctx)
	w.ChunkSize = 0 // one request
	if int64(len(data)) >= g.opts.ChunkThreshold {
		w.ChunkSize = g.opts.ChunkSize
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return g.mapErr("put", key, err)
	}
	return g.mapErr("put", key, w.Close())
}

func (g *Store) List(ctx context.Context, prefix, startAfter string, limit int) (objstore.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return objstore.ListPage{}, err
	}
	if limit <= 0 || limit > objstore.ListPageMax {
		limit = objstore.ListPageMax
	}
	full := g.prefix + prefix
	q := &storage.Query{Prefix: full}
	if startAfter != "" {
		q.StartOffset = g.prefix + startAfter + "\x00" // the first key after startAfter
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated"}); err != nil {
		return objstore.ListPage{}, err
	}
	ctx, cancel := g.call(ctx)
	defer cancel()
	it := g.bucket.Objects(ctx, q)
	var page objstore.ListPage
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return page, nil
		}
		if err != nil {
			return objstore.ListPage{}, g.mapErr("list", prefix, err)
		}
		if !strings.HasPrefix(attrs.Name, full) {
			return objstore.ListPage{}, fmt.Errorf("objstore: gcs list %s: the service answered a key outside the prefix: %w", prefix, objstore.ErrUnavailable)
		}
		key := strings.TrimPrefix(attrs.Name, g.prefix)
		if key <= startAfter || (len(page.Objects) > 0 && key <= page.Objects[len(page.Objects)-1].Key) {
			return objstore.ListPage{}, fmt.Errorf("objstore: gcs list %s: keys out of order: %w", prefix, objstore.ErrUnavailable)
		}
		if len(page.Objects) == limit {
			// One more exists: the page is full and the listing goes on after its last key.
			page.Next = page.Objects[limit-1].Key
			return page, nil
		}
		page.Objects = append(page.Objects, objstore.ObjectInfo{Key: key, Size: attrs.Size, ModTime: attrs.Updated})
	}
}

func (g *Store) Delete(ctx context.Context, key string) error {
	k, err := g.key(key)
	if err != nil {
		return err
	}
	ctx, cancel := g.call(ctx)
	defer cancel()
	if err = g.mapErr("delete", key, g.bucket.Object(k).Delete(ctx)); errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

func (g *Store) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	k, err := g.key(key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	ctx, cancel := g.call(ctx)
	defer cancel()
	attrs, err := g.bucket.Object(k).Attrs(ctx)
	if err != nil {
		return objstore.ObjectInfo{}, g.mapErr("stat", key, err)
	}
	return objstore.ObjectInfo{Key: key, Size: attrs.Size, ModTime: attrs.Updated}, nil
}

// ListDirs returns the immediate sub-prefixes under prefix (a delimiter listing).
func (g *Store) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	p := g.prefix + strings.TrimSuffix(prefix, "/") + "/"
	ctx, cancel := context.WithTimeout(ctx, g.timeout*10)
	defer cancel()
	it := g.bucket.Objects(ctx, &storage.Query{Prefix: p, Delimiter: "/"})
	var out []string
	for n := 0; ; n++ {
		if n >= objstore.MaxDirPages*1000 {
			return nil, fmt.Errorf("objstore: gcs list %s: more than %d entries: %w", prefix, objstore.MaxDirPages*1000, objstore.ErrUnavailable)
		}
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, g.mapErr("list", prefix, err)
		}
		if attrs.Prefix != "" {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(attrs.Prefix, p), "/"))
		}
	}
}
