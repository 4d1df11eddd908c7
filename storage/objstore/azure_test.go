package objstore_test

import (
	"bytes"
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func openAzure(t *testing.T) objstore.Store {
	t.Helper()
	s, err := objstore.Open(context.Background(), testenv.Azure(t))
	require.NoError(t, err)
	return s
}

// A real Azure Blob service (Azurite) passes the contract every commit relies on, put-if-absent's
// single winner under concurrency included.
func TestAzurePassesTheConformanceSuite(t *testing.T) {
	objstoretest.Conformance(t, openAzure(t))
}

func TestAzurePutIfAbsentHasExactlyOneWinner(t *testing.T) {
	for range 5 {
		objstoretest.ExactlyOneWinner(t, openAzure(t))
	}
}

// Directories are listed by delimiter; a listing longer than a page pages through the service's
// markers (ListAll), and a List after a key it never answered starts after that key.
func TestAzureListsDirectoriesAndPagesLongListings(t *testing.T) {
	objstoretest.LongListings(t, openAzure(t))
}

// A service that accepts connections and never answers cannot wedge a store: every call ends
// within its timeout.
func TestAzureCallsToAServiceThatStopsAnsweringEndInTime(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	t.Setenv("AZURE_STORAGE_KEY", testenv.AzuriteKey)
	s, err := objstore.NewAzure(context.Background(), objstore.AzureOptions{Container: "c", Account: testenv.AzuriteAccount,
		Endpoint: "http://" + objstoretest.SilentServer(t) + "/" + testenv.AzuriteAccount, CallTimeout: 500 * time.Millisecond, MaxRetries: 2})
	require.NoError(t, err)
	objstoretest.CallsEndInTime(t, s, objstore.ErrUnavailable)
}

func TestAzureURLsAreValidatedWhole(t *testing.T) {
	for _, bad := range []string{"az:///prefix", "az://c?endpoint=ftp://x", "az://c?key=secret", "az://c/../x", "az://user:pw@c/p"} {
		u, err := url.Parse(bad)
		require.NoError(t, err)
		_, err = objstore.ParseAzureURL(u)
		require.Error(t, err, bad)
	}
	u, _ := url.Parse("az://container/a/b?account=acct&endpoint=http://h:1/acct")
	o, err := objstore.ParseAzureURL(u)
	require.NoError(t, err)
	require.Equal(t, objstore.AzureOptions{Container: "container", Prefix: "a/b", Account: "acct", Endpoint: "http://h:1/acct"}, o)
}

// Large objects go up in staged blocks committed under put-if-absent's condition: racing writers
// have exactly one winner, and what is read back is what was written.
func TestAzureUploadsLargeObjectsInBlocks(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(testenv.Azure(t))
	require.NoError(t, err)
	o, err := objstore.ParseAzureURL(u)
	require.NoError(t, err)
	o.BlockThreshold, o.BlockSize = 3<<20, 1<<20
	s, err := objstore.NewAzure(ctx, o)
	require.NoError(t, err)
	data := make([]byte, 5<<20+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, s.PutIfAbsent(ctx, "big/object", data))
	require.ErrorIs(t, s.PutIfAbsent(ctx, "big/object", data[:4<<20]), objstore.ErrExists)
	got, err := s.Get(ctx, "big/object")
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "the blocks are reassembled in order")
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
