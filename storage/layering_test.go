package storage_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/strata-store/strata/"

// deps lists what pkg imports, directly or not (production code only: tests are not built).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).Output()
	require.NoError(t, err, "go list %s", pkg)
	return strings.Fields(string(out))
}

// The dependency rules of the tree, checked on what each package really imports (transitively):
// storage knows nothing of HTTP, Temporal, PostgreSQL or the layers above it; inside storage the
// layers only point down (objstore below fragment, fragment below table, table below shard, shard
// below lsm; vecindex and textindex, the index formats, below table and beside objstore);
// workflows (replayed deterministic code) touch no storage; no production package links the test
// doubles.
func TestPackagesImportOnlyDownward(t *testing.T) {
	above := []string{module + "api", module + "catalog", module + "activities", module + "workflows",
		module + "worker", module + "storecache", module + "kinds", module + "cmd", module + "client"}
	foreign := []string{"go.temporal.io/", "github.com/labstack/echo", "github.com/jackc/pgx", "net/http/httptest",
		module + "internal/testenv", module + "internal/testrows"}
	forbidden := map[string][]string{
		"storage/...":          append(append([]string{}, above...), foreign...),
		"storage/objstore":     {module + "storage/fragment", module + "storage/table", module + "storage/shard", module + "storage/lsm"},
		"storage/vecindex":     {module + "storage/objstore", module + "storage/fragment", module + "storage/table", module + "storage/shard", module + "storage/lsm"},
		"storage/textindex":    {module + "storage/objstore", module + "storage/fragment", module + "storage/table", module + "storage/shard", module + "storage/lsm", "net/http"},
		"storage/fragment":     {module + "storage/table", module + "storage/shard", module + "storage/lsm"},
		"storage/table":        {module + "storage/shard", module + "storage/lsm"},
		"storage/shard":        {module + "storage/lsm"},
		"workflows":            {module + "storage", module + "storecache", module + "catalog", "github.com/jackc/pgx", "github.com/labstack/echo"},
		"api":                  {module + "activities", module + "worker"},
		"cmd/strata":           {module + "storage/objstore/objstoretest", module + "internal/testenv", module + "internal/testrows"},
		"worker":               {module + "storage/objstore/objstoretest"},
		"storage/lsm":          {module + "storage/objstore/objstoretest"},
		"storage/objstore/...": {module + "storage/objstore/objstoretest"},
	}
	for pkg, banned := range forbidden {
		pkgs := []string{pkg}
		if base, ok := strings.CutSuffix(pkg, "/..."); ok {
			out, err := exec.Command("go", "list", module+base+"/...").Output()
			require.NoError(t, err)
			pkgs = nil
			for _, p := range strings.Fields(string(out)) {
				if !strings.HasSuffix(p, "/objstoretest") {
					pkgs = append(pkgs, strings.TrimPrefix(p, module))
				}
			}
		}
		for _, p := range pkgs {
			for _, d := range deps(t, p) {
				for _, b := range banned {
					if d == b || strings.HasPrefix(d, strings.TrimSuffix(b, "/")+"/") || (strings.HasSuffix(b, "/") && strings.HasPrefix(d, b)) {
						t.Errorf("%s imports %s (rule: %s must not depend on %s)", p, d, pkg, b)
					}
				}
			}
		}
	}
}
