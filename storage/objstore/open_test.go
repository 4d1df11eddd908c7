package objstore_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
)

func TestParseURLMakesLocalPathsAbsoluteFileURLs(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	for raw, want := range map[string]string{
		"/data/stores":          "file:///data/stores",
		"file:///data/stores":   "file:///data/stores",
		"file://.data/stores":   "file://" + filepath.Join(wd, ".data/stores"),
		".data/stores":          "file://" + filepath.Join(wd, ".data/stores"),
		"file:///data/../x/./y": "file:///x/y",
	} {
		u, err := objstore.ParseURL(raw)
		require.NoError(t, err, raw)
		require.Equal(t, want, u.String(), raw)
	}
	// gs:// is served only where storage/objstore/gcs is imported (this test binary does not).
	for _, bad := range []string{"", "gopher://host/x", "abfs://container@account.dfs.core.windows.net/prefix", "gs://bucket/prefix"} {
		_, err := objstore.ParseURL(bad)
		require.Error(t, err, "%q", bad)
	}
	_, err = objstore.ParseURL("nosuch://bucket/prefix")
	for _, scheme := range []string{"s3://", "az://", "file://"} {
		require.ErrorContains(t, err, scheme, "the error lists the schemes served")
	}
}

func TestOpenServesRegisteredSchemes(t *testing.T) {
	dir := t.TempDir()
	s, err := objstore.Open(context.Background(), "file://"+dir)
	require.NoError(t, err)
	require.NoError(t, s.Put(context.Background(), "a/b", []byte("x")))
	_, err = os.Stat(filepath.Join(dir, "a", "b"))
	require.NoError(t, err)

	objstore.Register("test-scheme", func(_ context.Context, u *url.URL) (objstore.Store, error) {
		return objstore.WithPrefix(s, u.Host)
	})
	other, err := objstore.Open(context.Background(), "test-scheme://sub")
	require.NoError(t, err)
	require.NoError(t, other.Put(context.Background(), "k", []byte("y")))
	got, err := s.Get(context.Background(), "sub/k")
	require.NoError(t, err)
	require.Equal(t, "y", string(got))
}
