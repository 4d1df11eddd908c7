package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

func openCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func def(kind catalog.Kind, name string) catalog.StoreDefinition {
	return catalog.StoreDefinition{Kind: kind, Name: name, URI: "file:///data/" + string(kind) + "/" + name}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "A", "0", "_x"[1:], "exp-1.run_2", strings.Repeat("z", 128), "x..y"} {
		require.NoError(t, catalog.ValidateName(ok), ok)
	}
	for _, bad := range []string{"", strings.Repeat("z", 129), "../x", "a/b", `a\b`, "_registry", "_stats",
		".hidden", "-dash", "a b", "é", "a\x00b", "..", "a:b"} {
		err := catalog.ValidateName(bad)
		require.ErrorIs(t, err, catalog.ErrInvalid, "%q", bad)
	}
}

func TestCreateIsIdempotentForTheSameDefinition(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	d := def(catalog.KindGeneric, "exp")
	d.Schema = json.RawMessage(`{"columns": [{"name": "x", "type": "int64"}], "key": "id"}`)
	first, created, err := c.CreateStore(ctx, d)
	require.NoError(t, err)
	require.True(t, created)

	// Same JSON values in another key order and spacing, and another URI: still the same store.
	d.Schema = json.RawMessage(`{"key":"id","columns":[{"type":"int64","name":"x"}]}`)
	d.URI = "file:///elsewhere"
	again, created, err := c.CreateStore(ctx, d)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, first.URI, again.URI)

	got, err := c.GetStore(ctx, catalog.KindGeneric, "exp")
	require.NoError(t, err)
	require.Equal(t, first.ID, got.ID)
	require.JSONEq(t, string(d.Schema), string(got.Schema))
	require.JSONEq(t, `{}`, string(got.Options))

	// The same name under another kind is another store.
	_, created, err = c.CreateStore(ctx, def(catalog.KindRollout, "exp"))
	require.NoError(t, err)
	require.True(t, created)
}

func TestCreateWithADifferentDefinitionConflicts(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	d := def(catalog.KindGeneric, "exp")
	d.Schema = json.RawMessage(`{"columns":[{"name":"x","type":"int64"}]}`)
	_, _, err := c.CreateStore(ctx, d)
	require.NoError(t, err)

	d.Schema = json.RawMessage(`{"columns":[{"name":"x","type":"string"}]}`)
	_, _, err = c.CreateStore(ctx, d)
	require.ErrorIs(t, err, catalog.ErrConflict)

	d2 := def(catalog.KindGeneric, "exp")
	d2.Schema = json.RawMessage(`{"columns":[{"name":"x","type":"int64"}]}`)
	d2.Options = json.RawMessage(`{"seal_on_add":true}`)
	_, _, err = c.CreateStore(ctx, d2)
	require.ErrorIs(t, err, catalog.ErrConflict)

	got, err := c.GetStore(ctx, catalog.KindGeneric, "exp")
	require.NoError(t, err)
	require.JSONEq(t, `{"columns":[{"name":"x","type":"int64"}]}`, string(got.Schema), "a conflict changes nothing")
}

func TestCreateRejectsInvalidInputAndWritesNothing(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	for _, name := range []string{"", strings.Repeat("a", 129), "../x", "a/b", `a\b`, "_registry"} {
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, name))
		require.ErrorIs(t, err, catalog.ErrInvalid, "name %q", name)
	}
	_, _, err := c.CreateStore(ctx, catalog.StoreDefinition{Kind: "table", Name: "x", URI: "u"})
	require.ErrorIs(t, err, catalog.ErrInvalid)
	// URIs that could not be opened or purged later are refused before they are written.
	for _, uri := range []string{"", "u", "s3://a b/rollout/x", "s3://a%zz/rollout/x", "s3://Bucket/x", "s3://ab/x", "s3://192.168.1.1/x",
		"s3://bucket/x?endpoint=http://h", "file:///data/" + strings.Repeat("s", 256) + "/x", "file:///data/../x", "file://host/x",
		"file:///data//x", "s3://user@bucket/x", "s3://bucket/x#f", "s3://-bucket/x", "file:///data/a%2Fb",
		"az://Container/x", "az://ab/x", "az://a--b/x", "az://con.tainer/x", "az://-con/x", "gs://Bucket/x", "gs://_b_/x", "gs://ab/x"} {
		bad := def(catalog.KindRollout, "x")
		bad.URI = uri
		_, _, err := c.CreateStore(ctx, bad)
		require.ErrorIs(t, err, catalog.ErrInvalid, "URI %q", uri)
	}
	bad := def(catalog.KindRollout, "x")
	bad.Schema = json.RawMessage(`{not json`)
	_, _, err = c.CreateStore(ctx, bad)
	require.ErrorIs(t, err, catalog.ErrInvalid)
	bad = def(catalog.KindRollout, "x")
	bad.Options = json.RawMessage(`[1]`)
	_, _, err = c.CreateStore(ctx, bad)
	require.ErrorIs(t, err, catalog.ErrInvalid)

	page, err := c.ListStores(ctx, catalog.KindRollout, catalog.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Stores)
}

func TestConcurrentCreatesOfOneNameMakeExactlyOneStore(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	const n = 16
	var wg sync.WaitGroup
	created := make([]bool, n)
	ids := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, ok, err := c.CreateStore(ctx, def(catalog.KindRollout, "race"))
			created[i], ids[i], errs[i] = ok, s.ID.String(), err
		}()
	}
	close(start)
	wg.Wait()
	winners := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, ids[0], ids[i], "every caller sees the one store")
		if created[i] {
			winners++
		}
	}
	require.Equal(t, 1, winners)
	page, err := c.ListStores(ctx, catalog.KindRollout, catalog.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Stores, 1)
}

func TestSoftDeleteHidesTheStoreAndRestoreBringsItBack(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	orig, _, err := c.CreateStore(ctx, def(catalog.KindRollout, "gone"))
	require.NoError(t, err)
	_, _, err = c.CreateStore(ctx, def(catalog.KindRollout, "kept"))
	require.NoError(t, err)

	deleted, err := c.SoftDeleteStore(ctx, catalog.KindRollout, "gone")
	require.NoError(t, err)
	require.NotNil(t, deleted.DeletedAt)

	_, err = c.GetStore(ctx, catalog.KindRollout, "gone")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	page, err := c.ListStores(ctx, catalog.KindRollout, catalog.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Stores, 1)
	require.Equal(t, "kept", page.Stores[0].Name)
	_, err = c.SoftDeleteStore(ctx, catalog.KindRollout, "gone")
	require.ErrorIs(t, err, catalog.ErrNotFound, "deleting twice")

	old, err := c.ListDeletedStores(ctx, time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, old, 1)
	require.Equal(t, orig.ID, old[0].ID)
	notYet, err := c.ListDeletedStores(ctx, time.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	require.Empty(t, notYet, "deleted too recently to be purged")

	restored, err := c.RestoreStore(ctx, catalog.KindRollout, "gone")
	require.NoError(t, err)
	require.Equal(t, orig.ID, restored.ID)
	require.Nil(t, restored.DeletedAt)
	got, err := c.GetStore(ctx, catalog.KindRollout, "gone")
	require.NoError(t, err)
	require.Equal(t, orig.ID, got.ID)
	_, err = c.RestoreStore(ctx, catalog.KindRollout, "gone")
	require.ErrorIs(t, err, catalog.ErrConflict, "restoring a live store")
	_, err = c.RestoreStore(ctx, catalog.KindRollout, "never")
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

func TestRecreatingADeletedNameMakesANewIncarnation(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	first, _, err := c.CreateStore(ctx, def(catalog.KindRollout, "again"))
	require.NoError(t, err)
	_, err = c.SoftDeleteStore(ctx, catalog.KindRollout, "again")
	require.NoError(t, err)
	d := def(catalog.KindRollout, "again")
	d.URI += "-2"
	second, created, err := c.CreateStore(ctx, d)
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, first.ID, second.ID)
	require.NotEqual(t, first.URI, second.URI)

	_, err = c.RestoreStore(ctx, catalog.KindRollout, "again")
	require.ErrorIs(t, err, catalog.ErrConflict, "the old incarnation cannot shadow the new one")

	require.NoError(t, c.PurgeStore(ctx, first.ID))
	require.ErrorIs(t, c.PurgeStore(ctx, second.ID), catalog.ErrNotFound, "a live store is never purged")
}

func TestListPagesByKeysetAndFiltersByPrefix(t *testing.T) {
	c, ctx := openCatalog(t), context.Background()
	var want, wantPrefixed []string
	for i := range 23 {
		name := fmt.Sprintf("exp-%02d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("run.%02d", i)
		}
		_, _, err := c.CreateStore(ctx, def(catalog.KindRollout, name))
		require.NoError(t, err)
		want = append(want, name)
		if strings.HasPrefix(name, "exp-1") {
			wantPrefixed = append(wantPrefixed, name)
		}
	}
	_, _, err := c.CreateStore(ctx, def(catalog.KindGeneric, "exp-10x"))
	require.NoError(t, err)
	_, err = c.SoftDeleteStore(ctx, catalog.KindRollout, "exp-11")
	require.NoError(t, err)
	want = removeName(want, "exp-11")
	wantPrefixed = removeName(wantPrefixed, "exp-11")

	collect := func(prefix string, pageSize int) []string {
		var names []string
		after := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100)
			page, err := c.ListStores(ctx, catalog.KindRollout, catalog.ListOptions{Prefix: prefix, After: after, Limit: pageSize})
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.Stores), pageSize)
			for _, s := range page.Stores {
				names = append(names, s.Name)
			}
			if page.Next == "" {
				return names
			}
			after = page.Next
		}
	}
	slices.Sort(want)
	require.Equal(t, want, collect("", 4))
	require.Equal(t, want, collect("", 1000))
	require.Equal(t, wantPrefixed, collect("exp-1", 3))
	require.Empty(t, collect("zzz", 3))

	_, err = c.ListStores(ctx, catalog.KindRollout, catalog.ListOptions{Prefix: "a/"})
	require.ErrorIs(t, err, catalog.ErrInvalid)
}

func TestMigrationsRunConcurrentlyAndIdempotently(t *testing.T) {
	url := testenv.Database(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := catalog.Open(ctx, url)
			if err == nil {
				c.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	c, err := catalog.Open(ctx, url)
	require.NoError(t, err)
	defer c.Close()
	_, _, err = c.CreateStore(ctx, def(catalog.KindDatagen, "after-migrate"))
	require.NoError(t, err)
}

func TestOpenFailsClearlyWhenTheDatabaseIsUnreachable(t *testing.T) {
	port, err := testenv.FreePort()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = catalog.Open(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/x?sslmode=disable&connect_timeout=2", port))
	require.Error(t, err)
	require.Contains(t, err.Error(), "catalog: connect")
	require.False(t, errors.Is(err, catalog.ErrNotFound))
}

func removeName(names []string, drop string) []string {
	out := names[:0]
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

func TestUnavailableDatabaseIsToldApartFromBadRequests(t *testing.T) {
	ctx := context.Background()
	// Nothing listens on a port that was just released: the connection is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := fmt.Sprintf("postgres://strata@%s/strata?connect_timeout=2", l.Addr())
	require.NoError(t, l.Close())
	_, err = catalog.Open(ctx, dead)
	require.Error(t, err)
	require.True(t, catalog.IsUnavailable(err), "refused connection: %v", err)

	c := openCatalog(t)
	_, err = c.GetStore(ctx, catalog.KindRollout, "missing")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.False(t, catalog.IsUnavailable(err), "an unknown store is an answer, not an outage")
	_, _, err = c.CreateStore(ctx, catalog.StoreDefinition{Kind: "nope", Name: "x"})
	require.False(t, catalog.IsUnavailable(err), "invalid input: %v", err)
	require.False(t, catalog.IsUnavailable(nil))
	// Network errors and early EOFs from elsewhere (object storage) are not the catalog's.
	require.False(t, catalog.IsUnavailable(fmt.Errorf("read entry: %w", io.ErrUnexpectedEOF)))
	require.False(t, catalog.IsUnavailable(&net.OpError{Op: "read", Err: errors.New("connection reset")}))
	require.False(t, catalog.IsUnavailable(context.DeadlineExceeded))

	c.Close()
	_, err = c.GetStore(ctx, catalog.KindRollout, "missing")
	require.True(t, catalog.IsUnavailable(err), "closed catalog: %v", err)
	require.ErrorIs(t, err, catalog.ErrUnavailable)
}

func TestAConnectionKilledMidUseIsUnavailable(t *testing.T) {
	ctx := context.Background()
	url := testenv.Database(t)
	c, err := catalog.Open(ctx, url)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.GetStore(ctx, catalog.KindRollout, "warm") // leaves an idle pooled connection
	require.ErrorIs(t, err, catalog.ErrNotFound)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	require.NoError(t, err)
	_, err = c.GetStore(ctx, catalog.KindRollout, "warm")
	require.Error(t, err, "the pooled connection was killed under the catalog")
	require.True(t, catalog.IsUnavailable(err), "%v", err)
}

// cuttingProxy forwards TCP connections to target until cut closes every one of them abruptly
// (what a network failure or a crashed server looks like to the client).
type cuttingProxy struct {
	l     net.Listener
	mu    sync.Mutex // guards conns
	conns []net.Conn
}

func newCuttingProxy(t *testing.T, target string) *cuttingProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cuttingProxy{l: l}
	t.Cleanup(func() { l.Close(); p.cut() })
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(server, client); server.Close() }()
			go func() { _, _ = io.Copy(client, server); client.Close() }()
		}
	}()
	return p
}

func (p *cuttingProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func TestAConnectionBrokenByTheNetworkIsUnavailable(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(testenv.Database(t))
	require.NoError(t, err)
	proxy := newCuttingProxy(t, u.Host)
	u.Host = proxy.l.Addr().String()
	c, err := catalog.Open(ctx, u.String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.GetStore(ctx, catalog.KindRollout, "warm")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	proxy.cut()
	_, err = c.GetStore(ctx, catalog.KindRollout, "warm")
	require.Error(t, err, "the pooled connection was cut")
	require.True(t, catalog.IsUnavailable(err), "%v", err)
}
