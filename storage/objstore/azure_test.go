package objstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
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

// listBlobsDouble is a List Blobs endpoint over a fixed, sorted set of blob names, answering
// pages of at most maxresults with its own markers. Azurite 3.37 honours startFrom (a listing
// that starts at a key); a service that ignores it (an older service version, another
// implementation of the API) answers from the prefix's start, and this double does that when
// ignoreStartFrom is set. It checks no signature.
type listBlobsDouble struct {
	names           []string
	ignoreStartFrom bool
	mu              sync.Mutex
	requests        int
}

func (d *listBlobsDouble) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method != http.MethodGet || q.Get("comp") != "list" {
		http.Error(w, "only List Blobs", http.StatusNotImplemented)
		return
	}
	d.mu.Lock()
	d.requests++
	d.mu.Unlock()
	prefix, marker := q.Get("prefix"), q.Get("marker")
	limit, err := strconv.Atoi(q.Get("maxresults"))
	if err != nil || limit <= 0 {
		limit = 5000
	}
	from := 0
	if marker != "" {
		from, _ = strconv.Atoi(marker)
	} else if start := q.Get("startFrom"); start != "" && !d.ignoreStartFrom {
		from = sort.SearchStrings(d.names, start)
	}
	var body strings.Builder
	body.WriteString(`<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Blobs>`)
	next, n := "", 0
	for i := from; i < len(d.names); i++ {
		if !strings.HasPrefix(d.names[i], prefix) {
			continue
		}
		if n == limit {
			next = strconv.Itoa(i)
			break
		}
		n++
		fmt.Fprintf(&body, `<Blob><Name>%s</Name><Properties><Content-Length>1</Content-Length><BlobType>BlockBlob</BlobType></Properties></Blob>`, d.names[i])
	}
	fmt.Fprintf(&body, `</Blobs><NextMarker>%s</NextMarker></EnumerationResults>`, next)
	w.Header().Set("Content-Type", "application/xml")
	_, _ = io.WriteString(w, body.String())
}

// Listing after a key gives the same pages whether the service honours startFrom or ignores it
// (then the store pages from the prefix's start and skips what sorts before the key), and a
// service that honours it costs one request a page.
func TestAzureListsAfterAKeyWhetherTheServiceHonoursStartFromOrNot(t *testing.T) {
	var names []string
	for i := range 2_500 {
		names = append(names, fmt.Sprintf("pre/dir/k%05d", i))
	}
	names = append(names, "pre/other/x")
	want := func(after string, limit int) []string {
		var out []string
		for _, n := range names {
			k := strings.TrimPrefix(n, "pre/")
			if strings.HasPrefix(k, "dir/") && k > after && len(out) < limit {
				out = append(out, k)
			}
		}
		return out
	}
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignoreStartFrom=%v", ignore), func(t *testing.T) {
			double := &listBlobsDouble{names: names, ignoreStartFrom: ignore}
			srv := httptest.NewServer(double)
			t.Cleanup(srv.Close)
			t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
			t.Setenv("AZURE_STORAGE_KEY", testenv.AzuriteKey)
			s, err := objstore.NewAzure(context.Background(), objstore.AzureOptions{Container: "c", Prefix: "pre", Account: testenv.AzuriteAccount,
				Endpoint: srv.URL + "/" + testenv.AzuriteAccount, CallTimeout: 5 * time.Second})
			require.NoError(t, err)
			for _, c := range []struct {
				after string
				limit int
			}{{"", 100}, {"dir/k00000", 10}, {"dir/k01234", 300}, {"dir/k01234x", 7}, {"dir/k02499", 10}, {"dir/k02498", 1000}} {
				double.mu.Lock()
				double.requests = 0
				double.mu.Unlock()
				// A page may hold fewer than asked (the contract says up to limit): follow Next.
				var got []string
				page, err := s.List(context.Background(), "dir/", c.after, c.limit)
				for err == nil {
					for _, o := range page.Objects {
						got = append(got, o.Key)
					}
					if page.Next == "" || len(got) >= c.limit {
						break
					}
					page, err = s.List(context.Background(), "dir/", page.Next, c.limit-len(got))
				}
				require.NoError(t, err)
				require.Equal(t, want(c.after, c.limit), got, "after %q", c.after)
				double.mu.Lock()
				if !ignore {
					require.LessOrEqual(t, double.requests, 1, "after %q: startFrom takes the listing to the key", c.after)
				}
				double.mu.Unlock()
			}
			all, err := objstore.ListAll(context.Background(), s, "dir/")
			require.NoError(t, err)
			require.Len(t, all, 2_500)
		})
	}
}
