package gcs_test

import (
	"bytes"
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/gcs"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// No goroutine outlives the tests (but idle keep-alives of the client's HTTP transport, and the
// client library's own background workers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.IdleHTTPConnections()...)
}

func openGCS(t *testing.T) objstore.Store {
	t.Helper()
	s, err := objstore.Open(context.Background(), testenv.GCS(t))
	require.NoError(t, err)
	return s
}

// A real GCS API (fake-gcs-server) passes the contract every commit relies on, put-if-absent's
// single winner under concurrency included.
func TestGCSPassesTheConformanceSuite(t *testing.T) {
	objstoretest.Conformance(t, openGCS(t))
}

func TestGCSPutIfAbsentHasExactlyOneWinner(t *testing.T) {
	for range 5 {
		objstoretest.ExactlyOneWinner(t, openGCS(t))
	}
}

// Directories are listed by delimiter; a listing longer than a page pages by startOffset
// (ListAll), and a List after any key starts right after it.
func TestGCSListsDirectoriesAndPagesLongListings(t *testing.T) {
	objstoretest.LongListings(t, openGCS(t))
}

func TestGCSURLsAreValidatedWhole(t *testing.T) {
	for _, bad := range []string{"gs:///prefix", "gs://b?endpoint=ftp://x", "gs://b?key=secret", "gs://b/../x", "gs://user:pw@b/p"} {
		u, err := url.Parse(bad)
		require.NoError(t, err)
		_, err = gcs.ParseURL(u)
		require.Error(t, err, bad)
	}
	u, _ := url.Parse("gs://bucket/a/b?endpoint=http://h:1/storage/v1/")
	o, err := gcs.ParseURL(u)
	require.NoError(t, err)
	require.Equal(t, gcs.Options{Bucket: "bucket", Prefix: "a/b", Endpoint: "http://h:1/storage/v1/"}, o)
}

// Large objects go up as resumable uploads in chunks, finalized under put-if-absent's
// precondition: racing writers have exactly one winner, and what is read back is what was
// written.
func TestGCSUploadsLargeObjectsInChunks(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(testenv.GCS(t))
	require.NoError(t, err)
	o, err := gcs.ParseURL(u)
	require.NoError(t, err)
	o.ChunkThreshold, o.ChunkSize = 3<<20, 1<<20
	s, err := gcs.New(ctx, o)
	require.NoError(t, err)
	data := make([]byte, 5<<20+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, s.PutIfAbsent(ctx, "big/object", data))
	require.ErrorIs(t, s.PutIfAbsent(ctx, "big/object", data[:4<<20]), objstore.ErrExists)
	got, err := s.Get(ctx, "big/object")
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "the chunks are reassembled in order")
	part, err := s.GetRange(ctx, "big/object", 1<<20-10, 20)
	require.NoError(t, err)
	require.Equal(t, data[1<<20-10:1<<20+10], part)
	var wg sync.WaitGroup
	results := make([]error, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.PutIfAbsent(ctx, "big/raced", data[:4<<20+i])
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
	require.NoError(t, s.Put(ctx, "big/replaced", data[:3<<20]))
	got, err = s.Get(ctx, "big/replaced")
	require.NoError(t, err)
	require.Len(t, got, 3<<20)
}

// A service that accepts connections and never answers cannot wedge a store: every call ends
// within its timeout.
func TestGCSCallsToAServiceThatStopsAnsweringEndInTime(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", objstoretest.SilentServer(t))
	s, err := gcs.New(context.Background(), gcs.Options{Bucket: "b", CallTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	objstoretest.CallsEndInTime(t, s, objstore.ErrUnavailable)
}

// Importing the package registers gs:// with objstore.Open and ParseURL.
func TestImportingThePackageServesGSURLs(t *testing.T) {
	u, err := objstore.ParseURL("gs://bucket/prefix")
	require.NoError(t, err)
	require.Equal(t, "gs", u.Scheme)
	_, err = objstore.ParseURL("nosuch://b/p")
	require.ErrorContains(t, err, "gs://")
}
