package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Python client (python/strata_client) against a real `strata serve`: its unittest suite,
// with STRATA_URL set, must pass every test and skip none.
func TestPythonClientAgainstARealServer(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	base, _ := startServe(t)
	dir, err := filepath.Abs("../../python")
	require.NoError(t, err)
	cmd := exec.Command(python, "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STRATA_URL="+base, "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, string(out), "skipped", "every test ran against the server:\n%s", out)
	require.True(t, strings.Contains(string(out), "\nOK"), "%s", out)
}
