// Package docs holds the project's documentation; this test keeps it from drifting from the
// code: every repository path, source file, `strata` flag and STRATA_ variable the README and
// the documents under docs/ name must exist.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's top directory (this package's parent).
const repoRoot = ".."

// documents are the files checked: the README and every Markdown file under docs/ but the
// benchmark history, which names files and flags as they were at the commits it cites.
func documents(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	out["README.md"] = string(readme)
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") || path == "benchmarks.md" {
			return err
		}
		data, err := os.ReadFile(path)
		out[filepath.Join("docs", path)] = string(data)
		return err
	}))
	return out
}

// sourceTree is every file of the repository (slash paths from its root), skipping data,
// dependencies and build output.
func sourceTree(t *testing.T) (files map[string]bool, dirs map[string]bool, baseNames map[string]bool) {
	t.Helper()
	files, dirs, baseNames = map[string]bool{}, map[string]bool{}, map[string]bool{}
	require.NoError(t, filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") && name != ".ci" || name == "node_modules" || name == "bin" || name == "__pycache__") {
				return filepath.SkipDir
			}
			dirs[rel] = true
			return nil
		}
		files[rel] = true
		baseNames[d.Name()] = true
		return nil
	}))
	return files, dirs, baseNames
}

// topDirs are the repository's top-level directories a document may name paths under.
func topDirs(dirs map[string]bool) []string {
	var out []string
	for d := range dirs {
		if d != "." && !strings.Contains(d, "/") {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// expandBraces turns "storage/{budget,cache}/" into "storage/budget/" and "storage/cache/".
func expandBraces(s string) []string {
	open := strings.IndexByte(s, '{')
	end := strings.IndexByte(s, '}')
	if open < 0 || end < open {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[open+1:end], ",") {
		out = append(out, expandBraces(s[:open]+alt+s[end+1:])...)
	}
	return out
}

// placeholder marks a path that stands for many (`store/<kind>/<name>`, `items/{id}/...`).
var placeholder = regexp.MustCompile(`<|\{[a-z_]+\}|\.\.\.|\*`)

// generated are paths a document names that exist only once a command has made them.
var generated = map[string]string{
	"docker/.env": "docker/gen-env.sh writes it",
}

func TestEveryPathTheDocsNameExists(t *testing.T) {
	files, dirs, _ := sourceTree(t)
	tops := topDirs(dirs)
	storageDirs := []string{}
	for d := range dirs {
		if rest, ok := strings.CutPrefix(d, "storage/"); ok && !strings.Contains(rest, "/") {
			storageDirs = append(storageDirs, rest)
		}
	}
	// A path starts at a top-level directory (or a storage package, named as storage's docs
	// name them: lsm/resolve.go), not inside a URL or another path.
	starts := strings.Join(append(tops, storageDirs...), "|")
	pathRE := regexp.MustCompile(`(^|[^A-Za-z0-9_./:-])((?:` + starts + `)/[A-Za-z0-9_./{},<>-]*[A-Za-z0-9_/}])`)
	for doc, text := range documents(t) {
		for _, m := range pathRE.FindAllStringSubmatch(text, -1) {
			raw := strings.TrimSuffix(m[2], ".")
			for _, p := range expandBraces(raw) {
				p = strings.TrimSuffix(p, "/")
				if placeholder.MatchString(p) || strings.Count(p, "/") == 0 && !dirs[p] || generated[p] != "" {
					continue
				}
				if !files[p] && !dirs[p] && !files["storage/"+p] && !dirs["storage/"+p] {
					t.Errorf("%s names %q, which is not in the repository", doc, raw)
				}
			}
		}
	}
}

func TestEverySourceFileTheDocsNameExists(t *testing.T) {
	_, _, baseNames := sourceTree(t)
	fileRE := regexp.MustCompile("`([A-Za-z0-9_]+\\.(?:go|sh|py|sql))`")
	for doc, text := range documents(t) {
		for _, m := range fileRE.FindAllStringSubmatch(text, -1) {
			if !baseNames[m[1]] {
				t.Errorf("%s names the file %q, which is nowhere in the repository", doc, m[1])
			}
		}
	}
}

// strataSources is the text of the strata command's sources (flags are declared there).
func strataSources(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, filepath.WalkDir(filepath.Join(repoRoot, "cmd", "strata"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		b.Write(data)
		return err
	}))
	return b.String()
}

// otherTools are commands whose flags documents show beside strata's.
var otherTools = regexp.MustCompile(`^\s*(\$ )?(\./)?(bin/)?(temporal|dd|go|chromium|docker|npm|pytest|curl|psql|make|tctl)\b`)

func TestEveryStrataFlagTheDocsNameExists(t *testing.T) {
	src := strataSources(t)
	flagRE := regexp.MustCompile(`(^|[^A-Za-z0-9-])--([a-z][a-z0-9-]+)`)
	for doc, text := range documents(t) {
		for _, line := range commandLines(text) {
			for _, span := range codeSpans(line) {
				if otherTools.MatchString(span) {
					continue
				}
				for _, m := range flagRE.FindAllStringSubmatch(span, -1) {
					if !strings.Contains(src, `"`+m[2]+`"`) {
						t.Errorf("%s names the flag --%s, which cmd/strata does not declare (in %q)", doc, m[2], span)
					}
				}
			}
		}
	}
}

func TestEveryStrataVariableTheDocsNameExists(t *testing.T) {
	flags := strataSources(t) // every flag is also its STRATA_ variable
	var src strings.Builder
	require.NoError(t, filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".data" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".sh") || strings.HasSuffix(path, ".py") ||
			strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml") || d.Name() == "Makefile") && !strings.HasSuffix(path, "drift_test.go") {
			data, err := os.ReadFile(path)
			src.Write(data)
			return err
		}
		return nil
	}))
	varRE := regexp.MustCompile(`\bSTRATA_[A-Z0-9_]*[A-Z0-9]\b`)
	for doc, text := range documents(t) {
		for _, v := range varRE.FindAllString(text, -1) {
			flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(v, "STRATA_")), "_", "-")
			if !strings.Contains(src.String(), v) && !strings.Contains(flags, `"`+flag+`"`) {
				t.Errorf("%s names %s, which is neither read nor a flag's variable", doc, v)
			}
		}
	}
}

// commandLines are text's lines with shell continuations ("\\" at the end) joined, so a
// command's flags stay with the command.
func commandLines(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutSuffix(strings.TrimRight(line, " "), "\\"); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// codeSpans are a line's `code spans`, or the whole line inside a fenced block (a line without
// backticks is taken whole, so indented commands count too).
func codeSpans(line string) []string {
	parts := strings.Split(line, "`")
	if len(parts) < 3 {
		return []string{line}
	}
	var out []string
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}
