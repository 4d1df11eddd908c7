// Command testreport reads `go test -json` events on stdin and prints what a developer reads:
// each package's result line, the full output of every failing test, and (-slowest N) the N
// slowest tests. With -summary it prints only the slowest tests (of a file that collected the
// events of several runs). It exits 1 when a test or package failed.
//
//	go test -json ./... | go run ./internal/testreport
//	go run ./internal/testreport -summary -slowest 10 < all-runs.json
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// report is what the events said.
type report struct {
	outputs map[string][]string // package + "\x00" + test -> its output lines, until it passes
	tests   []timing            // every finished top-level test
	failed  bool
}

type timing struct {
	pkg, test string
	seconds   float64
}

func main() {
	slowest := flag.Int("slowest", 10, "print this many of the slowest tests at the end (0: none)")
	summary := flag.Bool("summary", false, "print only the slowest tests")
	flag.Parse()
	r, err := read(os.Stdin, os.Stdout, !*summary)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if *slowest > 0 {
		r.printSlowest(os.Stdout, *slowest)
	}
	if r.failed && !*summary {
		os.Exit(1)
	}
}

// read consumes the events, printing package results and failing tests' output to out when
// echo is set. Lines that are not JSON (a build's errors) are printed as they are.
func read(in io.Reader, out io.Writer, echo bool) (*report, error) {
	r := &report{outputs: map[string][]string{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			if echo {
				fmt.Fprintf(out, "%s\n", line)
			}
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" {
				if echo && !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS\n") {
					fmt.Fprint(out, e.Output) // "ok pkg 1.2s", "FAIL pkg", build output
				}
				continue
			}
			r.outputs[key] = append(r.outputs[key], e.Output)
		case "pass", "skip":
			if e.Test != "" && !strings.Contains(e.Test, "/") && e.Action == "pass" {
				r.tests = append(r.tests, timing{e.Package, e.Test, e.Elapsed})
			}
			delete(r.outputs, key)
		case "fail":
			r.failed = true
			if e.Test == "" {
				continue
			}
			if !strings.Contains(e.Test, "/") {
				r.tests = append(r.tests, timing{e.Package, e.Test, e.Elapsed})
			}
			if echo {
				fmt.Fprintf(out, "--- FAIL: %s (%s, %.2fs)\n%s", e.Test, e.Package, e.Elapsed, strings.Join(r.outputs[key], ""))
			}
			delete(r.outputs, key)
		}
	}
	return r, sc.Err()
}

// printSlowest prints the n slowest top-level tests.
func (r *report) printSlowest(out io.Writer, n int) {
	slices.SortFunc(r.tests, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	fmt.Fprintf(out, "\nslowest %d tests:\n", min(n, len(r.tests)))
	for _, t := range r.tests[:min(n, len(r.tests))] {
		fmt.Fprintf(out, "%8.2fs  %s  %s\n", t.seconds, strings.TrimPrefix(t.pkg, "github.com/strata-store/strata/"), t.test)
	}
}
