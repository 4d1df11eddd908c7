package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReportPrintsResultsFailuresAndTheSlowest(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p/a","Test":"TestFast"}`,
		`{"Action":"output","Package":"p/a","Test":"TestFast","Output":"=== RUN   TestFast\n"}`,
		`{"Action":"pass","Package":"p/a","Test":"TestFast","Elapsed":0.5}`,
		`{"Action":"output","Package":"p/a","Test":"TestSlow","Output":"    slow_test.go:9: boom\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestSlow/sub","Output":"sub output\n"}`,
		`{"Action":"fail","Package":"p/a","Test":"TestSlow/sub","Elapsed":3}`,
		`{"Action":"fail","Package":"p/a","Test":"TestSlow","Elapsed":7.25}`,
		`{"Action":"output","Package":"p/a","Output":"FAIL\tp/a\t8.1s\n"}`,
		`{"Action":"fail","Package":"p/a","Elapsed":8.1}`,
		`# p/b`,
		`{"Action":"pass","Package":"p/b","Test":"TestMiddle","Elapsed":2}`,
		`{"Action":"output","Package":"p/b","Output":"ok  \tp/b\t2.0s\n"}`,
	}, "\n")
	var out strings.Builder
	r, err := read(strings.NewReader(in), &out, true)
	require.NoError(t, err)
	require.True(t, r.failed)
	r.printSlowest(&out, 2)
	text := out.String()
	require.Contains(t, text, "--- FAIL: TestSlow (p/a, 7.25s)\n    slow_test.go:9: boom\n")
	require.Contains(t, text, "--- FAIL: TestSlow/sub (p/a, 3.00s)\nsub output\n")
	require.Contains(t, text, "FAIL\tp/a\t8.1s\n")
	require.Contains(t, text, "ok  \tp/b\t2.0s\n")
	require.Contains(t, text, "# p/b\n", "a build's own lines are printed as they are")
	require.NotContains(t, text, "=== RUN", "passing tests' output is not")
	require.Contains(t, text, "slowest 2 tests:\n    7.25s  p/a  TestSlow\n    2.00s  p/b  TestMiddle\n")
}
