package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// install-tool.sh (make tools): a tool is installed once per cache, whichever clone asks, linked
// into each clone, and installed again when its entry is damaged (a Go binary missing, an npm
// install that never completed). The go and npm commands are stand-ins that count their calls.
func TestInstallToolInstallsOncePerCacheAndAgainWhenDamaged(t *testing.T) {
	tmp := t.TempDir()
	cache := filepath.Join(tmp, "cache")
	calls := filepath.Join(tmp, "calls")
	stubs := filepath.Join(tmp, "stubs")
	writeFile(t, filepath.Join(stubs, "go"), 0o755, `#!/bin/sh
echo go >> "`+calls+`"
spec=$2; name=${spec%@*}; name=${name##*/}
printf '#!/bin/sh\necho tool\n' > "$GOBIN/$name" && chmod +x "$GOBIN/$name"
`)
	writeFile(t, filepath.Join(stubs, "npm"), 0o755, `#!/bin/sh
echo npm >> "`+calls+`"
mkdir -p node_modules/.bin && echo x > node_modules/.bin/tool
`)
	// clone makes a checkout of its own holding the script and a package to install.
	clone := func(name string) string {
		dir := filepath.Join(tmp, name)
		script, err := os.ReadFile(filepath.Join(RepoRoot(), "scripts", "install-tool.sh"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "scripts", "install-tool.sh"), 0o755, string(script))
		writeFile(t, filepath.Join(dir, "pkg", "package.json"), 0o644, `{"name":"pkg"}`)
		writeFile(t, filepath.Join(dir, "pkg", "package-lock.json"), 0o644, `{"lockfileVersion":3}`)
		return dir
	}
	install := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "scripts", "install-tool.sh"), args...)
		cmd.Env = append(os.Environ(), "STRATA_TOOLS_CACHE="+cache, "GO="+filepath.Join(stubs, "go"),
			"PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("install-tool.sh %v: %v\n%s", args, err, out)
		}
	}
	count := func(what string) int {
		data, _ := os.ReadFile(calls)
		return strings.Count(string(data), what+"\n")
	}
	goTool := []string{"go", "tool", "example.com/cmd/tool@v1.2.3"}
	npmPkg := []string{"npm", "pkg"}

	first, second := clone("first"), clone("second")
	for _, dir := range []string{first, second} {
		install(dir, goTool...)
		install(dir, npmPkg...)
		if out, err := exec.Command(filepath.Join(dir, "bin", "tool")).Output(); err != nil || string(out) != "tool\n" {
			t.Fatalf("%s: bin/tool runs: %q, %v", dir, out, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "pkg", "node_modules", ".bin", "tool")); err != nil {
			t.Fatalf("%s: the package's node_modules: %v", dir, err)
		}
	}
	if count("go") != 1 || count("npm") != 1 {
		t.Fatalf("two clones installed go %d and npm %d times; want once each", count("go"), count("npm"))
	}

	// Damage both entries: the Go binary gone, the npm install's completion mark gone.
	entries, _ := filepath.Glob(filepath.Join(cache, "go", "*", "tool"))
	marks, _ := filepath.Glob(filepath.Join(cache, "npm", "*", ".complete"))
	if len(entries) != 1 || len(marks) != 1 {
		t.Fatalf("cache entries: %v %v", entries, marks)
	}
	for _, f := range append(entries, marks...) {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(first, "bin", "tool")) // make runs the script when its target is gone
	install(first, goTool...)
	install(first, npmPkg...)
	if count("go") != 2 || count("npm") != 2 {
		t.Fatalf("after the damage: go %d, npm %d calls; want 2 each", count("go"), count("npm"))
	}
	if _, err := os.Stat(filepath.Join(first, "pkg", "node_modules", ".bin", "tool")); err != nil {
		t.Fatalf("reinstalled package: %v", err)
	}
}

func writeFile(t *testing.T, path string, mode os.FileMode, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
