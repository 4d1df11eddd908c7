package openapiclient_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	oapi "github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	_ "github.com/oapi-codegen/runtime" // what the generated client imports: kept in go.mod by this test
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storecache"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

// generatedClient validates the served document and generates a Go client from it.
func generatedClient(t *testing.T) string {
	t.Helper()
	data, err := api.OpenAPIDocument("generated")
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(data)
	require.NoError(t, err, "the served document loads")
	require.NoError(t, doc.Validate(context.Background()), "the served document is valid OpenAPI")
	src, err := oapi.Generate(doc, oapi.Configuration{PackageName: "openapiclient",
		Generate: oapi.GenerateOptions{Client: true, Models: true}})
	require.NoError(t, err)
	return src
}

// A client generated from nothing but the document, in a package of its own beside this one,
// creates stores, appends and reads against a real worker, and decodes its error answers
// (testdata/drive_test.go.txt, run with `go test` in that package).
func TestTheGeneratedClientDrivesARealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a generated package")
	}
	src := generatedClient(t)
	ctx := context.Background()
	cat, err := catalog.Open(ctx, testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	mgr, err := storecache.New(cat, storecache.Config{DataURL: t.TempDir(), Store: lsm.Options{Instance: "w"}}, reg, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	port, err := testenv.FreePort()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.NoError(t, err)
	srv := &http.Server{Handler: api.New(api.Deps{Log: log, Catalog: cat, Stores: mgr, Registry: reg, Version: "test"})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	// Inside the module (so it resolves the module's own dependencies), removed afterwards.
	dir, err := os.MkdirTemp(".", "generated-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.gen.go"), []byte(src), 0o644))
	drive, err := os.ReadFile(filepath.Join("testdata", "drive_test.go.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "drive_test.go"), drive, 0o644))

	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "./"+filepath.Base(dir))
	cmd.Env = append(os.Environ(), "STRATA_OPENAPI_SERVER_URL=http://"+ln.Addr().String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the generated client's drive:\n%s", out)
}
