// Checks shared by the cloud object stores' tests (S3, Azure Blob, GCS): long listings and
// directory listings against a real service or emulator, and a service that accepts connections
// and never answers.
package objstoretest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
)

// LongListings checks s (empty): directories are listed by delimiter, a listing longer than a
// page of 1,000 pages through (ListAll) in key order, and a List after a key no page ended at
// (or after every key) starts right after it.
func LongListings(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	for _, k := range []string{"rollout/a.1/x", "rollout/a.1/y", "rollout/b.2/x", "generic/c.3/x"} {
		require.NoError(t, s.Put(ctx, k, []byte("v")))
	}
	dirs, err := s.(objstore.DirLister).ListDirs(ctx, "rollout")
	require.NoError(t, err)
	require.Equal(t, []string{"a.1", "b.2"}, dirs)
	for i := range 1200 {
		require.NoError(t, s.Put(ctx, "many/"+string(rune('a'+i/1000))+"/"+time.Duration(i).String(), nil))
	}
	all, err := objstore.ListAll(ctx, s, "many/")
	require.NoError(t, err)
	require.Len(t, all, 1200, "listings past one page of 1,000")
	for i := 1; i < len(all); i++ {
		require.Less(t, all[i-1].Key, all[i].Key)
	}
	page, err := s.List(ctx, "many/", all[1100].Key, 5)
	require.NoError(t, err)
	require.Len(t, page.Objects, 5)
	require.Equal(t, all[1101].Key, page.Objects[0].Key)
	page, err = s.List(ctx, "many/b/", "many/b/zzz", 5)
	require.NoError(t, err)
	require.Empty(t, page.Objects)
	require.Empty(t, page.Next)
}

// SilentServer listens on the loopback, accepts every connection and never reads or answers;
// it returns its address and closes everything when the test ends.
func SilentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return l.Addr().String()
}

// CallsEndInTime checks that a get, a put-if-absent and a list on s (a store on a SilentServer)
// each fail within 3 seconds: with an error matching want, or any error when want is nil.
func CallsEndInTime(t *testing.T, s objstore.Store, want error) {
	for name, call := range map[string]func() error{
		"get":           func() error { _, err := s.Get(context.Background(), "k"); return err },
		"put-if-absent": func() error { return s.PutIfAbsent(context.Background(), "k", []byte("v")) },
		"list":          func() error { _, err := s.List(context.Background(), "", "", 10); return err },
	} {
		start := time.Now()
		err := call()
		if want == nil {
			require.Error(t, err, name)
		} else {
			require.ErrorIs(t, err, want, name)
		}
		require.Less(t, time.Since(start), 3*time.Second, name)
	}
}
