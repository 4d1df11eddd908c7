package objstore_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func openS3(t *testing.T) objstore.Store {
	t.Helper()
	s, err := objstore.Open(context.Background(), testenv.S3(t))
	require.NoError(t, err)
	return s
}

// A real S3 server (versitygw) passes the contract every commit relies on, put-if-absent's single
// winner under concurrency included.
func TestS3PassesTheConformanceSuite(t *testing.T) {
	objstoretest.Conformance(t, openS3(t))
}

func TestS3PutIfAbsentHasExactlyOneWinner(t *testing.T) {
	for range 5 {
		objstoretest.ExactlyOneWinner(t, openS3(t))
	}
}

func TestS3ListsDirectoriesAndPagesLongListings(t *testing.T) {
	objstoretest.LongListings(t, openS3(t))
}

// A server that accepts connections and never answers cannot wedge a store: every call ends
// within its timeout.
func TestS3CallsToAServerThatStopsAnsweringEndInTime(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	s, err := objstore.NewS3(context.Background(), objstore.S3Options{Bucket: "b", Endpoint: "http://" + objstoretest.SilentServer(t),
		PathStyle: true, CallTimeout: 500 * time.Millisecond, MaxAttempts: 3})
	require.NoError(t, err)
	objstoretest.CallsEndInTime(t, s, nil)
}

func TestS3URLsAreValidatedWhole(t *testing.T) {
	for _, bad := range []string{"s3:///prefix", "s3://b?endpoint=ftp://x", "s3://b?path_style=maybe", "s3://b?secret=x", "s3://b/../x"} {
		u, err := url.Parse(bad)
		require.NoError(t, err)
		_, err = objstore.ParseS3URL(u)
		require.Error(t, err, bad)
	}
	u, _ := url.Parse("s3://bucket/a/b?endpoint=http://h:1&region=r&path_style=true")
	o, err := objstore.ParseS3URL(u)
	require.NoError(t, err)
	require.Equal(t, objstore.S3Options{Bucket: "bucket", Prefix: "a/b", Endpoint: "http://h:1", Region: "r", PathStyle: true}, o)
}

// Large objects go up in parts (concurrently); put-if-absent still has exactly one winner, and
// what is read back is what was written.
func TestS3UploadsLargeObjectsInParts(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(testenv.S3(t))
	require.NoError(t, err)
	o, err := objstore.ParseS3URL(u)
	require.NoError(t, err)
	o.MultipartThreshold, o.PartSize = 6<<20, 5<<20
	s, err := objstore.NewS3(ctx, o)
	require.NoError(t, err)
	data := make([]byte, 12<<20+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, s.PutIfAbsent(ctx, "big/object", data))
	require.ErrorIs(t, s.PutIfAbsent(ctx, "big/object", data[:7<<20]), objstore.ErrExists)
	got, err := s.Get(ctx, "big/object")
	require.NoError(t, err)
	require.Equal(t, len(data), len(got))
	require.True(t, bytes.Equal(data, got), "the parts are reassembled in order")
	part, err := s.GetRange(ctx, "big/object", 5<<20-10, 20)
	require.NoError(t, err)
	require.Equal(t, data[5<<20-10:5<<20+10], part)
	// Racing multipart put-if-absents: one winner, the others see ErrExists.
	var wg sync.WaitGroup
	results := make([]error, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.PutIfAbsent(ctx, "big/raced", data[:7<<20+i])
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range results {
		if err == nil {
			wins++
		} else {
			require.ErrorIs(t, err, objstore.ErrExists)
		}
	}
	require.Equal(t, 1, wins)
	require.NoError(t, s.Put(ctx, "big/replaced", data))
	require.NoError(t, s.Put(ctx, "big/replaced", data[:6<<20]))
	got, err = s.Get(ctx, "big/replaced")
	require.NoError(t, err)
	require.Len(t, got, 6<<20)
}

// An object store that lies about sizes or never ends a listing cannot make a reader allocate
// what it declares or loop forever: each answer is a storage fault (ErrUnavailable).
func TestS3AnswersThatLieAboutSizesOrNeverEndAreFaults(t *testing.T) {
	const listPage = `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><Prefix>%s</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys>` +
		`<IsTruncated>true</IsTruncated><Contents><Key>%s</Key><Size>1</Size></Contents><NextContinuationToken>same</NextContinuationToken>` +
		`<CommonPrefixes><Prefix>d/x/</Prefix></CommonPrefixes></ListBucketResult>`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodGet && q.Has("list-type"):
			w.Header().Set("Content-Type", "application/xml")
			key := "l/k"
			if q.Get("prefix") == "d/" {
				key = "d/x/k"
			}
			if q.Get("start-after") == "l/k" {
				key = "l/a" // backwards
			}
			fmt.Fprintf(w, listPage, q.Get("prefix"), key)
		case strings.HasSuffix(r.URL.Path, "/huge"):
			w.Header().Set("Content-Length", strconv.FormatInt(1<<40, 10))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("tiny"))
		case strings.HasSuffix(r.URL.Path, "/short"):
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("tiny"))
		default:
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	s, err := objstore.NewS3(context.Background(), objstore.S3Options{Bucket: "b", Endpoint: srv.URL, PathStyle: true, CallTimeout: 2 * time.Second, MaxAttempts: 1})
	require.NoError(t, err)
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = s.Get(ctx, "huge")
	require.ErrorIs(t, err, objstore.ErrUnavailable, "a 1 TiB declaration")
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "nothing near the declared size was allocated")
	_, err = s.Get(ctx, "short")
	require.Error(t, err, "a body shorter than declared")
	got, err := s.Get(ctx, "fine")
	require.NoError(t, err)
	require.Equal(t, "ok", string(got))
	_, err = objstore.ListAll(ctx, s, "l/")
	require.ErrorIs(t, err, objstore.ErrUnavailable, "a listing that goes backwards")
	_, err = s.ListDirs(ctx, "d")
	require.ErrorIs(t, err, objstore.ErrUnavailable, "a listing that repeats its token")
	_, err = s.List(ctx, "elsewhere/", "", 10)
	require.ErrorIs(t, err, objstore.ErrUnavailable, "keys outside the prefix asked for")
}
