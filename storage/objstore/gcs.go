// Google Cloud Storage: gs://bucket/prefix.
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
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// GCSOptions configure a GCS store beyond what the environment says.
type GCSOptions struct {
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

// GCSURLOptions are the query parameters a gs:// URL may carry.
var GCSURLOptions = []string{"endpoint"}

// ParseGCSURL reads gs://bucket/prefix?endpoint=..; unknown query parameters are an error.
func ParseGCSURL(u *url.URL) (GCSOptions, error) {
	o := GCSOptions{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if o.Bucket == "" {
		return o, fmt.Errorf("objstore: %s: a gs:// URL names a bucket (gs://bucket/prefix)", u.Redacted())
	}
	if u.User != nil {
		return o, fmt.Errorf("objstore: gs://%s: credentials do not belong in a store URL (use Application Default Credentials)", o.Bucket)
	}
	if o.Prefix != "" {
		if err := Validate(o.Prefix); err != nil {
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
			return o, fmt.Errorf("objstore: unknown gs URL option %q (known: %s)", k, strings.Join(GCSURLOptions, ", "))
		}
	}
	return o, nil
}

// GCS is a Store over a GCS bucket and prefix. Safe for concurrent use.
type GCS struct {
	bucket  *storage.BucketHandle
	name    string
	prefix  string // "" or ends with "/"
	timeout time.Duration
	opts    GCSOptions
}

// NewGCS connects to the bucket o names (no request is made until the first call).
func NewGCS(ctx context.Context, o GCSOptions) (*GCS, error) {
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
	return &GCS{bucket: client.Bucket(o.Bucket), name: o.Bucket, prefix: prefix, timeout: o.CallTimeout, opts: o}, nil
}

func openGCS(ctx context.Context, u *url.URL) (Store, error) {
	o, err := ParseGCSURL(u)
	if err != nil {
		return nil, err
	}
	return NewGCS(ctx, o)
}

func (g *GCS) key(key string) (string, error) {
	if err := Validate(key); err != nil {
		return "", err
	}
	return g.prefix + key, nil
}

// call bounds one call (all its attempts) by the store's timeout.
func (g *GCS) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, g.timeout)
}

// mapErr turns the client's errors into the package's: not found, exists, or a wrapped error
// that names the operation and key (never credentials).
func (g *GCS) mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch ge.Code {
		case http.StatusPreconditionFailed:
			return fmt.Errorf("objstore: %s %s: %w", op, key, ErrExists)
		case http.StatusNotFound:
			if !errors.Is(err, storage.ErrBucketNotExist) && !strings.Contains(strings.ToLower(ge.Message), "bucket") {
				return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
			}
		}
		return fmt.Errorf("objstore: gcs %s %s: %w: HTTP %d", op, key, ErrUnavailable, ge.Code)
	}
	return fmt.Errorf("objstore: gcs %s %s: %w: %w", op, key, ErrUnavailable, err)
}

func (g *GCS) Get(ctx context.Context, key string) ([]byte, error) {
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
	return readBody(r, r.Attrs.Size, MaxObjectBytes, func(err error) error { return g.mapErr("get", key, err) })
}

func (g *GCS) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 0 {
		_, _, err := ClampRange(0, offset, length)
		return nil, err
	}
	info, err := g.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	// Cut at the object's end as ClampRange does (an offset past it is an empty range).
	if offset >= info.Size || length == 0 {
		return []byte{}, nil
	}
	length = min(length, info.Size-offset)
	k, _ := g.key(key)
	ctx, cancel := g.call(ctx)
	defer cancel()
	r, err := g.bucket.Object(k).NewRangeReader(ctx, offset, length)
	if err != nil {
		return nil, g.mapErr("get range of", key, err)
	}
	defer r.Close()
	if r.Attrs.Size > 0 && r.Remain() > length {
		return nil, fmt.Errorf("objstore: get range of %s: the object store declares %d bytes for a %d-byte range: %w", key, r.Remain(), length, ErrUnavailable)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(length, preallocateMax)))
	if _, err := buf.ReadFrom(io.LimitReader(r, length)); err != nil {
		return nil, g.mapErr("get range of", key, err)
	}
	return buf.Bytes(), nil
}

func (g *GCS) Put(ctx context.Context, key string, data []byte) error {
	return g.put(ctx, key, data, false)
}

func (g *GCS) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return g.put(ctx, key, data, true)
}

func (g *GCS) put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
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

func (g *GCS) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	if limit <= 0 || limit > listPageMax {
		limit = listPageMax
	}
	full := g.prefix + prefix
	q := &storage.Query{Prefix: full}
	if startAfter != "" {
		q.StartOffset = g.prefix + startAfter + "\x00" // the first key after startAfter
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated"}); err != nil {
		return ListPage{}, err
	}
	ctx, cancel := g.call(ctx)
	defer cancel()
	it := g.bucket.Objects(ctx, q)
	var page ListPage
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return page, nil
		}
		if err != nil {
			return ListPage{}, g.mapErr("list", prefix, err)
		}
		if !strings.HasPrefix(attrs.Name, full) {
			return ListPage{}, fmt.Errorf("objstore: gcs list %s: the service answered a key outside the prefix: %w", prefix, ErrUnavailable)
		}
		key := strings.TrimPrefix(attrs.Name, g.prefix)
		if key <= startAfter || (len(page.Objects) > 0 && key <= page.Objects[len(page.Objects)-1].Key) {
			return ListPage{}, fmt.Errorf("objstore: gcs list %s: keys out of order: %w", prefix, ErrUnavailable)
		}
		if len(page.Objects) == limit {
			// One more exists: the page is full and the listing goes on after its last key.
			page.Next = page.Objects[limit-1].Key
			return page, nil
		}
		page.Objects = append(page.Objects, ObjectInfo{Key: key, Size: attrs.Size, ModTime: attrs.Updated})
	}
}

func (g *GCS) Delete(ctx context.Context, key string) error {
	k, err := g.key(key)
	if err != nil {
		return err
	}
	ctx, cancel := g.call(ctx)
	defer cancel()
	if err = g.mapErr("delete", key, g.bucket.Object(k).Delete(ctx)); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (g *GCS) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := g.key(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	ctx, cancel := g.call(ctx)
	defer cancel()
	attrs, err := g.bucket.Object(k).Attrs(ctx)
	if err != nil {
		return ObjectInfo{}, g.mapErr("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: attrs.Size, ModTime: attrs.Updated}, nil
}

// ListDirs returns the immediate sub-prefixes under prefix (a delimiter listing).
func (g *GCS) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	p := g.prefix + strings.TrimSuffix(prefix, "/") + "/"
	ctx, cancel := context.WithTimeout(ctx, g.timeout*10)
	defer cancel()
	it := g.bucket.Objects(ctx, &storage.Query{Prefix: p, Delimiter: "/"})
	var out []string
	for n := 0; ; n++ {
		if n >= maxDirPages*1000 {
			return nil, fmt.Errorf("objstore: gcs list %s: more than %d entries: %w", prefix, maxDirPages*1000, ErrUnavailable)
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
