// Azure Blob Storage (and ADLS Gen2 accounts, through their blob endpoint):
// az://container/prefix?account=name.
//
// Put-if-absent is a block blob upload with If-None-Match: * (409 BlobAlreadyExists or 412
// ConditionNotMet mean the key exists); objects of BlockThreshold bytes or more are staged in
// blocks, BlockConcurrency at a time, and the condition applies to the commit of the block list,
// so exactly one of racing writers creates the object. Every call runs under its own timeout
// (Options.CallTimeout) covering the SDK's bounded retries, so a server that stops answering
// fails the call instead of wedging the store. Azure Blob cannot write in place for Strata's
// purposes: the WAL uses one entry object per group commit there.
//
// Listing: Azure pages listings with an opaque marker, while Store.List resumes after a key. The
// marker a page ended with is remembered under the key it ended at (a bounded map), so a listing
// that pages through a prefix (ListAll) continues with the service's own marker; a List after a
// key it has not seen asks the service to start from that key (startFrom) and skips the key
// itself, and against a service that ignores startFrom it pages from the prefix's start, skipping
// what sorts before — correct, slower.
//
// Credentials follow the SDK's conventions and never appear in URLs, errors or logs:
// AZURE_STORAGE_CONNECTION_STRING when set (an emulator's, or a key-based account's); else
// AZURE_STORAGE_KEY with the account (a shared key); else the default credential chain of
// azidentity (environment service principal, workload identity, managed identity, Azure CLI).
// The account comes from the URL's account= or AZURE_STORAGE_ACCOUNT; the endpoint from the URL's
// endpoint= (an emulator, a sovereign cloud), else https://<account>.blob.core.windows.net.
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// AzureOptions configure an Azure Blob store beyond what the environment says.
type AzureOptions struct {
	Container string
	Prefix    string // key prefix inside the container ("" = the container's root)
	Account   string // overrides AZURE_STORAGE_ACCOUNT
	Endpoint  string // the blob service URL (default https://<account>.blob.core.windows.net)
	// CallTimeout bounds each call, retries included (default 30s); MaxRetries bounds the
	// retries of one call (default 3).
	CallTimeout time.Duration
	MaxRetries  int32
	// Objects of BlockThreshold bytes or more (default 64 MiB) are uploaded in blocks of
	// BlockSize bytes (default 16 MiB), BlockConcurrency at a time (default 4); put-if-absent
	// then applies to the commit of the block list.
	BlockThreshold   int64
	BlockSize        int64
	BlockConcurrency uint16
}

// AzureURLOptions are the query parameters an az:// URL may carry.
var AzureURLOptions = []string{"account", "endpoint"}

// ParseAzureURL reads az://container/prefix?account=..&endpoint=..; unknown query parameters are
// an error.
func ParseAzureURL(u *url.URL) (AzureOptions, error) {
	o := AzureOptions{Container: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if o.Container == "" {
		return o, fmt.Errorf("objstore: %s: an az:// URL names a container (az://container/prefix)", u.Redacted())
	}
	if o.Prefix != "" {
		if err := Validate(o.Prefix); err != nil {
			return o, fmt.Errorf("objstore: az://%s/%s: %w", o.Container, o.Prefix, err)
		}
	}
	if u.User != nil {
		return o, fmt.Errorf("objstore: az://%s: credentials do not belong in a store URL (use AZURE_STORAGE_* or the identity chain)", o.Container)
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "account":
			o.Account = v
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil || e.RawQuery != "" {
				return o, fmt.Errorf("objstore: azure endpoint %q: want http(s)://host[:port][/path]", v)
			}
			o.Endpoint = strings.TrimSuffix(v, "/")
		default:
			return o, fmt.Errorf("objstore: unknown az URL option %q (known: %s)", k, strings.Join(AzureURLOptions, ", "))
		}
	}
	return o, nil
}

// Azure is a Store over an Azure Blob container and prefix. Safe for concurrent use.
type Azure struct {
	client  *container.Client
	prefix  string // "" or ends with "/"
	timeout time.Duration
	opts    AzureOptions

	markersMu sync.Mutex        // guards markers
	markers   map[string]string // "prefix\x00last key of a page" -> the service's marker after it
}

// maxRememberedMarkers bounds the listing markers an Azure store remembers.
const maxRememberedMarkers = 1024

// NewAzure connects to the container o names (no request is made until the first call).
func NewAzure(ctx context.Context, o AzureOptions) (*Azure, error) {
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 3
	}
	if o.BlockThreshold <= 0 {
		o.BlockThreshold = 64 << 20
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 16 << 20
	}
	if o.BlockConcurrency == 0 {
		o.BlockConcurrency = 4
	}
	if o.Account == "" {
		o.Account = os.Getenv("AZURE_STORAGE_ACCOUNT")
	}
	copts := &container.ClientOptions{ClientOptions: policy.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: o.MaxRetries, TryTimeout: o.CallTimeout, MaxRetryDelay: 2 * time.Second},
	}}
	var client *container.Client
	var err error
	switch conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); {
	case conn != "":
		client, err = container.NewClientFromConnectionString(conn, o.Container, copts)
		if err == nil && o.Endpoint != "" {
			err = fmt.Errorf("both AZURE_STORAGE_CONNECTION_STRING and an endpoint= in the URL name the service: keep one")
		}
	default:
		if o.Account == "" && o.Endpoint == "" {
			return nil, fmt.Errorf("objstore: az://%s: no storage account (account= in the URL, or AZURE_STORAGE_ACCOUNT)", o.Container)
		}
		endpoint := o.Endpoint
		if endpoint == "" {
			endpoint = "https://" + o.Account + ".blob.core.windows.net"
		}
		containerURL := endpoint + "/" + url.PathEscape(o.Container)
		if key := os.Getenv("AZURE_STORAGE_KEY"); key != "" {
			var cred *container.SharedKeyCredential
			if cred, err = container.NewSharedKeyCredential(o.Account, key); err == nil {
				client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, copts)
			}
		} else {
			var cred azcore.TokenCredential
			if cred, err = azidentity.NewDefaultAzureCredential(nil); err == nil {
				client, err = container.NewClient(containerURL, cred, copts)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: az://%s: Azure configuration: %w", o.Container, err)
	}
	prefix := strings.Trim(o.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Azure{client: client, prefix: prefix, timeout: o.CallTimeout, opts: o, markers: map[string]string{}}, nil
}

func openAzure(ctx context.Context, u *url.URL) (Store, error) {
	o, err := ParseAzureURL(u)
	if err != nil {
		return nil, err
	}
	return NewAzure(ctx, o)
}

func (a *Azure) key(key string) (string, error) {
	if err := Validate(key); err != nil {
		return "", err
	}
	return a.prefix + key, nil
}

// call bounds one call (all its attempts) by the store's timeout.
func (a *Azure) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

// mapErr turns the SDK's errors into the package's: not found, exists, or a wrapped error that
// names the operation and key (never credentials).
func (a *Azure) mapErr(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet):
		return fmt.Errorf("objstore: %s %s: %w", op, key, ErrExists)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		if re.StatusCode == 404 && re.ErrorCode != string(bloberror.ContainerNotFound) {
			return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
		}
		return fmt.Errorf("objstore: azure %s %s: %w: HTTP %d %s", op, key, ErrUnavailable, re.StatusCode, re.ErrorCode)
	}
	return fmt.Errorf("objstore: azure %s %s: %w: %w", op, key, ErrUnavailable, err)
}

func (a *Azure) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := a.key(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.call(ctx)
	defer cancel()
	out, err := a.client.NewBlobClient(k).DownloadStream(ctx, nil)
	if err != nil {
		return nil, a.mapErr("get", key, err)
	}
	defer out.Body.Close()
	return ReadBody(out.Body, deref(out.ContentLength, 0), MaxObjectBytes, func(err error) error { return a.mapErr("get", key, err) })
}

func (a *Azure) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 0 {
		_, _, err := ClampRange(0, offset, length)
		return nil, err
	}
	if length == 0 {
		if _, err := a.Stat(ctx, key); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	k, err := a.key(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.call(ctx)
	defer cancel()
	out, err := a.client.NewBlobClient(k).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: offset, Count: length}})
	if err != nil {
		if bloberror.HasCode(err, bloberror.InvalidRange) {
			if _, serr := a.Stat(ctx, key); serr != nil {
				return nil, serr
			}
			return []byte{}, nil // the offset is at or past the end: an empty range, as ClampRange cuts it
		}
		return nil, a.mapErr("get range of", key, err)
	}
	defer out.Body.Close()
	return ReadRangeBody(out.Body, deref(out.ContentLength, 0), length, key, func(err error) error { return a.mapErr("get range of", key, err) })
}

func (a *Azure) Put(ctx context.Context, key string, data []byte) error {
	return a.put(ctx, key, data, false)
}

func (a *Azure) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return a.put(ctx, key, data, true)
}

func (a *Azure) put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	k, err := a.key(key)
	if err != nil {
		return err
	}
	var cond *blob.AccessConditions
	if ifAbsent {
		cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
	}
	bb := a.client.NewBlockBlobClient(k)
	if int64(len(data)) >= a.opts.BlockThreshold {
		// Staged blocks, committed under the condition. The call's timeout covers the whole
		// upload: a block's share of it is what its size asks.
		cctx, cancel := context.WithTimeout(ctx, a.timeout*time.Duration(1+int64(len(data))/a.opts.BlockSize))
		defer cancel()
		_, err = bb.UploadBuffer(cctx, data, &blockblob.UploadBufferOptions{BlockSize: a.opts.BlockSize,
			Concurrency: a.opts.BlockConcurrency, AccessConditions: cond})
		return a.mapErr("put", key, err)
	}
	cctx, cancel := a.call(ctx)
	defer cancel()
	_, err = bb.Upload(cctx, readSeekNopCloser{bytes.NewReader(data)}, &blockblob.UploadOptions{AccessConditions: cond})
	return a.mapErr("put", key, err)
}

// readSeekNopCloser makes a bytes.Reader the io.ReadSeekCloser an upload takes.
type readSeekNopCloser struct{ *bytes.Reader }

func (readSeekNopCloser) Close() error { return nil }

func (a *Azure) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	if limit <= 0 || limit > ListPageMax {
		limit = ListPageMax
	}
	full := a.prefix + prefix
	ask := limit
	opts := &container.ListBlobsFlatOptions{Prefix: to.Ptr(full)}
	if startAfter != "" {
		a.markersMu.Lock()
		marker, ok := a.markers[prefix+"\x00"+startAfter]
		a.markersMu.Unlock()
		if ok {
			opts.Marker = to.Ptr(marker)
		} else {
			// startFrom includes the key itself: one more, so that a page still holds limit.
			opts.StartFrom = to.Ptr(a.prefix + startAfter)
			ask = limit + 1
		}
	}
	opts.MaxResults = to.Ptr(int32(ask))
	var page ListPage
	// Pages until one holds a key after startAfter (a service that ignores startFrom answers
	// from the prefix's start); bounded like a directory listing.
	for pages := 0; ; pages++ {
		if pages >= MaxDirPages {
			return ListPage{}, fmt.Errorf("objstore: azure list %s: more than %d pages before %q: %w", prefix, MaxDirPages, startAfter, ErrUnavailable)
		}
		cctx, cancel := a.call(ctx)
		out, err := a.client.NewListBlobsFlatPager(opts).NextPage(cctx)
		cancel()
		if err != nil {
			return ListPage{}, a.mapErr("list", prefix, err)
		}
		if len(out.Segment.BlobItems) > ask {
			return ListPage{}, fmt.Errorf("objstore: azure list %s: %d objects in a page of at most %d: %w", prefix, len(out.Segment.BlobItems), ask, ErrUnavailable)
		}
		for _, b := range out.Segment.BlobItems {
			name := deref(b.Name, "")
			if !strings.HasPrefix(name, full) {
				return ListPage{}, fmt.Errorf("objstore: azure list %s: the service answered a key outside the prefix: %w", prefix, ErrUnavailable)
			}
			key := strings.TrimPrefix(name, a.prefix)
			if key <= startAfter {
				continue
			}
			if n := len(page.Objects); n > 0 && key <= page.Objects[n-1].Key {
				return ListPage{}, fmt.Errorf("objstore: azure list %s: keys out of order: %w", prefix, ErrUnavailable)
			}
			info := ObjectInfo{Key: key}
			if b.Properties != nil {
				info.Size = deref(b.Properties.ContentLength, 0)
				info.ModTime = deref(b.Properties.LastModified, time.Time{})
			}
			page.Objects = append(page.Objects, info)
		}
		next := deref(out.NextMarker, "")
		if len(page.Objects) > limit {
			// The key startFrom included was not there: the page holds one more than asked.
			// The service's marker is past the one cut, so it is not remembered.
			page.Objects = page.Objects[:limit]
			page.Next = page.Objects[limit-1].Key
			return page, nil
		}
		if next == "" {
			return page, nil
		}
		if len(page.Objects) > 0 {
			page.Next = page.Objects[len(page.Objects)-1].Key
			a.rememberMarker(prefix+"\x00"+page.Next, next)
			return page, nil
		}
		if opts.Marker != nil && *opts.Marker == next {
			return ListPage{}, fmt.Errorf("objstore: azure list %s: the service repeats its marker: %w", prefix, ErrUnavailable)
		}
		opts.Marker, opts.StartFrom = to.Ptr(next), nil
	}
}

// rememberMarker keeps the service's marker after a page's last key (forgetting them all when
// the map is full: a listing in progress then resumes with startFrom).
func (a *Azure) rememberMarker(at, marker string) {
	a.markersMu.Lock()
	defer a.markersMu.Unlock()
	if len(a.markers) >= maxRememberedMarkers {
		clear(a.markers)
	}
	a.markers[at] = marker
}

func (a *Azure) Delete(ctx context.Context, key string) error {
	k, err := a.key(key)
	if err != nil {
		return err
	}
	ctx, cancel := a.call(ctx)
	defer cancel()
	_, err = a.client.NewBlobClient(k).Delete(ctx, nil)
	if err = a.mapErr("delete", key, err); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (a *Azure) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := a.key(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	ctx, cancel := a.call(ctx)
	defer cancel()
	out, err := a.client.NewBlobClient(k).GetProperties(ctx, nil)
	if err != nil {
		return ObjectInfo{}, a.mapErr("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: deref(out.ContentLength, 0), ModTime: deref(out.LastModified, time.Time{})}, nil
}

// ListDirs returns the immediate sub-prefixes under prefix (a delimiter listing).
func (a *Azure) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	p := a.prefix + strings.TrimSuffix(prefix, "/") + "/"
	pager := a.client.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: to.Ptr(p)})
	var out []string
	for pages := 0; pager.More(); pages++ {
		if pages >= MaxDirPages {
			return nil, fmt.Errorf("objstore: azure list %s: more than %d pages of directories: %w", prefix, MaxDirPages, ErrUnavailable)
		}
		cctx, cancel := a.call(ctx)
		page, err := pager.NextPage(cctx)
		cancel()
		if err != nil {
			return nil, a.mapErr("list", prefix, err)
		}
		for _, bp := range page.Segment.BlobPrefixes {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(deref(bp.Name, ""), p), "/"))
		}
	}
	return out, nil
}

// deref is *p, or def when p is nil (the SDK answers optional fields as pointers).
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
