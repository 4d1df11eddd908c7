// S3 (and every server that speaks its API with conditional writes): s3://bucket/prefix.
//
// Put-if-absent is a PUT with If-None-Match: * (412 means the key exists; a 409
// ConditionalRequestConflict, a concurrent conditional write in flight, is retried). Every call
// runs under its own timeout (Options.CallTimeout) and the SDK's standard retryer (bounded
// attempts, jittered backoff, no retry quota), so a server that stops answering fails the call
// instead of wedging the store. S3 cannot write in place: the WAL uses one entry object per group
// commit there.
//
// Configuration follows AWS conventions — credentials and region from the environment, shared
// config files or instance roles; AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_S3 for the endpoint — and
// the URL's query overrides them: s3://bucket/prefix?endpoint=http://host:port&region=r&path_style=true
// (&profile=name: the credentials of that shared-config profile).
// Credentials never appear in URLs, errors or logs.
//
// Another backend (GCS, Azure Blob) is one more file like this one: a Store over its client whose
// create-if-absent maps to its precondition (GCS ifGenerationMatch=0, Azure If-None-Match: *),
// registered under its scheme with Register.
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"
)

// S3Options configure an S3 store beyond what the environment says.
type S3Options struct {
	Bucket    string
	Prefix    string // key prefix inside the bucket ("" = the bucket's root)
	Endpoint  string // overrides AWS_ENDPOINT_URL(_S3)
	Region    string // overrides AWS_REGION (default us-east-1 when nothing sets one)
	PathStyle bool   // bucket in the path (most S3-compatible servers), not the host name
	// Profile names the shared-config profile whose credentials this store uses (default: the
	// environment's chain), so each configured location can have credentials of its own.
	Profile string
	// CallTimeout bounds each call, retries included (default 30s); MaxAttempts bounds the
	// attempts of one call (default 4).
	CallTimeout time.Duration
	MaxAttempts int
	// Objects of MultipartThreshold bytes or more (default 64 MiB) are uploaded in parts of
	// PartSize bytes (default 16 MiB, at least 5 MiB: S3's minimum), PartConcurrency at a time
	// (default 4); put-if-absent then applies to the completion.
	MultipartThreshold int64
	PartSize           int64
	PartConcurrency    int
}

// S3URLOptions are the query parameters an s3:// URL may carry.
var S3URLOptions = []string{"endpoint", "region", "path_style", "profile"}

// ParseS3URL reads s3://bucket/prefix?endpoint=..&region=..&path_style=true; unknown query
// parameters are an error.
func ParseS3URL(u *url.URL) (S3Options, error) {
	o := S3Options{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if o.Bucket == "" {
		return o, fmt.Errorf("objstore: %s: an s3:// URL names a bucket (s3://bucket/prefix)", u.Redacted())
	}
	if o.Prefix != "" {
		if err := Validate(o.Prefix); err != nil {
			return o, fmt.Errorf("objstore: s3://%s/%s: %w", o.Bucket, o.Prefix, err)
		}
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return o, fmt.Errorf("objstore: s3 endpoint %q: want http(s)://host[:port]", v)
			}
			o.Endpoint = v
		case "region":
			o.Region = v
		case "profile":
			o.Profile = v
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, fmt.Errorf("objstore: s3 path_style %q: want true or false", v)
			}
			o.PathStyle = b
		default:
			return o, fmt.Errorf("objstore: unknown s3 URL option %q (known: %s)", k, strings.Join(S3URLOptions, ", "))
		}
	}
	return o, nil
}

// S3 is a Store over an S3 bucket and prefix. Safe for concurrent use.
type S3 struct {
	client  *s3.Client
	bucket  string
	prefix  string // "" or ends with "/"
	timeout time.Duration
	opts    S3Options
}

// NewS3 connects to the bucket o names (no request is made until the first call).
func NewS3(ctx context.Context, o S3Options) (*S3, error) {
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.MultipartThreshold <= 0 {
		o.MultipartThreshold = 64 << 20
	}
	if o.PartSize <= 0 {
		o.PartSize = 16 << 20
	}
	o.PartSize = max(o.PartSize, 5<<20)
	if o.PartConcurrency <= 0 {
		o.PartConcurrency = 4
	}
	var loadOpts []func(*config.LoadOptions) error
	if o.Profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(o.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("objstore: AWS configuration: %w", err)
	}
	if o.Region != "" {
		cfg.Region = o.Region
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	httpClient := awshttp.NewBuildableClient().WithTimeout(o.CallTimeout)
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
		so.HTTPClient = httpClient
		// Checksums only where the API requires them: S3-compatible servers differ in support.
		so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		so.Retryer = retry.NewStandard(func(r *retry.StandardOptions) {
			r.MaxAttempts = o.MaxAttempts
			r.MaxBackoff = 2 * time.Second
			r.RateLimiter = ratelimit.None
		})
	})
	prefix := strings.Trim(o.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3{client: client, bucket: o.Bucket, prefix: prefix, timeout: o.CallTimeout, opts: o}, nil
}

func openS3(ctx context.Context, u *url.URL) (Store, error) {
	o, err := ParseS3URL(u)
	if err != nil {
		return nil, err
	}
	return NewS3(ctx, o)
}

func (s *S3) key(key string) (string, error) {
	if err := Validate(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// call bounds one call (all its attempts) by the store's timeout.
func (s *S3) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// mapErr turns the SDK's errors into the package's: not found, exists, or a wrapped error that
// names the operation and key (never credentials).
func (s *S3) mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
		case "PreconditionFailed":
			return fmt.Errorf("objstore: %s %s: %w", op, key, ErrExists)
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 404 {
		return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("objstore: s3 %s %s: %w: %w", op, key, ErrUnavailable, err)
}

func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &k})
	if err != nil {
		return nil, s.mapErr("get", key, err)
	}
	defer out.Body.Close()
	return ReadBody(out.Body, aws.ToInt64(out.ContentLength), MaxObjectBytes, func(err error) error { return s.mapErr("get", key, err) })
}

func (s *S3) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 0 {
		_, _, err := ClampRange(0, offset, length)
		return nil, err
	}
	if length == 0 {
		if _, err := s.Stat(ctx, key); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.call(ctx)
	defer cancel()
	rng := fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &k, Range: &rng})
	if err != nil {
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "InvalidRange" {
			return []byte{}, nil // the offset is at or past the end: an empty range, as ClampRange cuts it
		}
		return nil, s.mapErr("get range of", key, err)
	}
	defer out.Body.Close()
	return ReadRangeBody(out.Body, aws.ToInt64(out.ContentLength), length, key, func(err error) error { return s.mapErr("get range of", key, err) })
}

func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	return s.put(ctx, key, data, false)
}

func (s *S3) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.put(ctx, key, data, true)
}

// conflictRetries bounds the retries of a conditional PUT that met a concurrent one (409).
const conflictRetries = 5

func (s *S3) put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if int64(len(data)) >= s.opts.MultipartThreshold {
		return s.mapErr("put", key, s.putMultipart(ctx, k, data, ifAbsent))
	}
	for attempt := 0; ; attempt++ {
		cctx, cancel := s.call(ctx)
		in := &s3.PutObjectInput{Bucket: &s.bucket, Key: &k, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}
		if ifAbsent {
			in.IfNoneMatch = aws.String("*")
		}
		_, err = s.client.PutObject(cctx, in)
		cancel()
		var api smithy.APIError
		if err != nil && errors.As(err, &api) && api.ErrorCode() == "ConditionalRequestConflict" && attempt < conflictRetries {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt+1) * 20 * time.Millisecond):
			}
			continue
		}
		return s.mapErr("put", key, err)
	}
}

func (s *S3) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	ctx, cancel := s.call(ctx)
	defer cancel()
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix + prefix), MaxKeys: aws.Int32(int32(limit))}
	if startAfter != "" {
		in.StartAfter = aws.String(s.prefix + startAfter)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return ListPage{}, s.mapErr("list", prefix, err)
	}
	if len(out.Contents) > limit {
		return ListPage{}, fmt.Errorf("objstore: s3 list %s: %d objects in a page of at most %d: %w", prefix, len(out.Contents), limit, ErrUnavailable)
	}
	var page ListPage
	for _, o := range out.Contents {
		if !strings.HasPrefix(aws.ToString(o.Key), s.prefix+prefix) {
			return ListPage{}, fmt.Errorf("objstore: s3 list %s: the server answered a key outside the prefix: %w", prefix, ErrUnavailable)
		}
		info := ObjectInfo{Key: strings.TrimPrefix(aws.ToString(o.Key), s.prefix), Size: aws.ToInt64(o.Size)}
		if o.LastModified != nil {
			info.ModTime = *o.LastModified
		}
		page.Objects = append(page.Objects, info)
	}
	if aws.ToBool(out.IsTruncated) && len(page.Objects) > 0 {
		page.Next = page.Objects[len(page.Objects)-1].Key
	}
	return page, nil
}

func (s *S3) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	ctx, cancel := s.call(ctx)
	defer cancel()
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &k})
	if err = s.mapErr("delete", key, err); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := s.key(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	ctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &k})
	if err != nil {
		return ObjectInfo{}, s.mapErr("stat", key, err)
	}
	info := ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength)}
	if out.LastModified != nil {
		info.ModTime = *out.LastModified
	}
	return info, nil
}

// ListDirs returns the immediate sub-prefixes under prefix (a delimiter listing).
func (s *S3) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	p := s.prefix + strings.TrimSuffix(prefix, "/") + "/"
	var out []string
	var token *string
	for pages := 0; ; pages++ {
		if pages >= MaxDirPages {
			return nil, fmt.Errorf("objstore: s3 list %s: more than %d pages of directories: %w", prefix, MaxDirPages, ErrUnavailable)
		}
		cctx, cancel := s.call(ctx)
		page, err := s.client.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &p, Delimiter: aws.String("/"), ContinuationToken: token})
		cancel()
		if err != nil {
			return nil, s.mapErr("list", prefix, err)
		}
		for _, cp := range page.CommonPrefixes {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), p), "/"))
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			return out, nil
		}
		if token != nil && *token == *page.NextContinuationToken {
			return nil, fmt.Errorf("objstore: s3 list %s: the server repeats its continuation token: %w", prefix, ErrUnavailable)
		}
		token = page.NextContinuationToken
	}
}

// putMultipart uploads data in parts, concurrently, then completes the upload (with
// If-None-Match: * for put-if-absent, so exactly one of racing uploads becomes the object). A
// failed upload is aborted: no parts are left behind.
func (s *S3) putMultipart(ctx context.Context, k string, data []byte, ifAbsent bool) (err error) {
	cctx, cancel := s.call(ctx)
	created, err := s.client.CreateMultipartUpload(cctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &k})
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
			_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &k, UploadId: created.UploadId})
			cancel()
		}
	}()
	n := (int64(len(data)) + s.opts.PartSize - 1) / s.opts.PartSize
	parts := make([]types.CompletedPart, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.PartConcurrency)
	for i := range n {
		g.Go(func() error {
			part := data[i*s.opts.PartSize : min(int64(len(data)), (i+1)*s.opts.PartSize)]
			pctx, cancel := s.call(gctx)
			defer cancel()
			num := int32(i + 1)
			out, err := s.client.UploadPart(pctx, &s3.UploadPartInput{Bucket: &s.bucket, Key: &k, UploadId: created.UploadId,
				PartNumber: &num, Body: bytes.NewReader(part), ContentLength: aws.Int64(int64(len(part)))})
			if err != nil {
				return err
			}
			parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: &num}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	in := &s3.CompleteMultipartUploadInput{Bucket: &s.bucket, Key: &k, UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}
	if ifAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	cctx, cancel = s.call(ctx)
	defer cancel()
	_, err = s.client.CompleteMultipartUpload(cctx, in)
	return err
}
