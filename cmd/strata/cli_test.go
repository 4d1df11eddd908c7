package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/testenv"
)

// startServe runs `strata serve` in-process and returns its base URL and database URL.
func startServe(t *testing.T) (string, string) { return startServeAt(t, t.TempDir()) }

// startServeAt is startServe with its stores at dataURL.
func startServeAt(t *testing.T, dataURL string) (string, string) {
	port, err := testenv.FreePort()
	require.NoError(t, err)
	db := testenv.Database(t)
	// No Temporal: a port nothing listens on, never the default address, where a developer's
	// `make run` stack (with a maintenance worker of another catalog) may be serving.
	noTemporal, err := testenv.FreePort()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveConfig{
			ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), DatabaseURL: db, DataURL: dataURL,
			StoreCacheCapacity: 10, FlushInterval: time.Hour, LogLevel: "warn", LogFormat: "text", ShutdownTimeout: 5 * time.Second,
			TenantDepth: 1, // the flag's default
			Temporal:    temporalConfig{Address: fmt.Sprintf("127.0.0.1:%d", noTemporal), Namespace: "default"},
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/api/v1/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond)
	return base, db
}

// cli runs one strata command line and returns what it printed on stdout.
func cli(t *testing.T, args ...string) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() {
		data, _ := io.ReadAll(r)
		out <- string(data)
	}()
	runErr := run(context.Background(), args)
	os.Stdout = stdout
	w.Close()
	return <-out, runErr
}

// stderrOf runs fn and returns what it printed on stderr.
func stderrOf(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stderr := os.Stderr
	os.Stderr = w
	out := make(chan string)
	go func() {
		data, _ := io.ReadAll(r)
		out <- string(data)
	}()
	fn()
	os.Stderr = stderr
	w.Close()
	return <-out
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cli(t, args...)
	require.NoError(t, err, "strata %s", strings.Join(args, " "))
	return out
}

func writeRolloutParquet(t *testing.T, path string, n int) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "rollout_id", Type: arrow.BinaryTypes.String}, {Name: "content", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("p%05d", i))
		b.Field(1).(*array.StringBuilder).Append("t-parquet")
		b.Field(2).(*array.StringBuilder).Append("from parquet")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
}

func parquetRows(t *testing.T, path string) int64 {
	f, err := file.OpenParquetFile(path, false)
	require.NoError(t, err)
	defer f.Close()
	return f.NumRows()
}

func TestCLIImportsReadsAndReports(t *testing.T) {
	base, db := startServe(t)
	api := "--api-url=" + base
	dir := t.TempDir()

	require.Contains(t, mustCLI(t, "store", "create", api, "rollout/cli"), "rollout/cli created")
	require.Contains(t, mustCLI(t, "store", "create", api, "rollout/cli"), "exists (same definition)")
	_, err := cli(t, "store", "create", api, "generic/g")
	require.ErrorContains(t, err, "400", "a generic store needs a schema")
	schema := filepath.Join(dir, "schema.json")
	require.NoError(t, os.WriteFile(schema, []byte(`{"columns": [["id", "string"], ["step", "int64"]]}`), 0o644))
	mustCLI(t, "store", "create", api, "--schema=@"+schema, "generic/g")
	require.Contains(t, mustCLI(t, "store", "list", api, "rollout"), "cli")

	var jsonl strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&jsonl, `{"id": "j%05d", "rollout_id": "t-json", "content": "line %d"}`+"\n", i, i)
		if i == 10 {
			jsonl.WriteString("\n") // blank lines are skipped
		}
	}
	jsonlPath := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(jsonlPath, []byte(jsonl.String()), 0o644))
	mustCLI(t, "append", api, "--batch-rows=1000", "--progress=always", "rollout/cli", jsonlPath)
	pqPath := filepath.Join(dir, "rows.parquet")
	writeRolloutParquet(t, pqPath, 1200)
	mustCLI(t, "append", api, "--batch-rows=500", "rollout/cli", pqPath)

	require.Contains(t, mustCLI(t, "get", api, "rollout/cli", "j00042"), `"content": "line 42"`)
	require.Contains(t, mustCLI(t, "get", api, "rollout/cli", "p00007"), `"content": "from parquet"`)
	_, err = cli(t, "get", api, "rollout/cli", "absent")
	require.ErrorContains(t, err, "not found")

	lines := strings.Split(strings.TrimSpace(mustCLI(t, "scan", api, "--page-size=700", "rollout/cli")), "\n")
	require.Len(t, lines, 3700, "every imported row, across pages")
	filtered := strings.Split(strings.TrimSpace(mustCLI(t, "scan", api, `--filter={"rollout_id":"t-parquet"}`, "rollout/cli")), "\n")
	require.Len(t, filtered, 1200)
	table := strings.Split(strings.TrimSpace(mustCLI(t, "scan", api, "--format=table", "--limit=3", "rollout/cli")), "\n")
	require.Len(t, table, 4, "a header and three rows")
	require.True(t, strings.HasPrefix(table[0], "ID "), table[0])
	header := strings.Fields(table[0])
	require.Less(t, slices.Index(header, "ROLLOUT_ID"), slices.Index(header, "CONTENT"), "schema order: %v", header)
	require.Contains(t, header, "CREATED_AT")
	out := filepath.Join(dir, "out.parquet")
	summary := stderrOf(t, func() { mustCLI(t, "scan", api, "--format=parquet", "--output="+out, "rollout/cli") })
	require.EqualValues(t, 3700, parquetRows(t, out))
	require.Contains(t, summary, "wrote rollout/cli to "+out+" (parquet", "a file output says what it wrote")

	genPath := filepath.Join(dir, "g.jsonl")
	require.NoError(t, os.WriteFile(genPath, []byte(`{"id": "a", "step": 1}`+"\n"+`{"id": "b", "step": 2}`+"\n"), 0o644))
	mustCLI(t, "append", api, "generic/g", genPath)
	gout := filepath.Join(dir, "g.parquet")
	mustCLI(t, "scan", api, "--format=parquet", "--output="+gout, "generic/g")
	require.EqualValues(t, 2, parquetRows(t, gout))

	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("[1, 2]\n"), 0o644))
	_, err = cli(t, "append", api, "rollout/cli", bad)
	require.ErrorContains(t, err, "line 1: not a JSON object")
	_, err = cli(t, "append", api, "rollout/missing", jsonlPath)
	require.ErrorContains(t, err, "404")
	_, err = cli(t, "append", api, "rollout/missing", filepath.Join(dir, "not-there.jsonl"))
	require.ErrorContains(t, err, "404", "the store is checked before the input is opened")

	status := mustCLI(t, "status", "--database-url="+db)
	require.Contains(t, status, "rollout/cli")
	require.Contains(t, status, "generic/g")
	require.Contains(t, mustCLI(t, "store", "delete", api, "generic/g"), "deleted")
	require.NotContains(t, mustCLI(t, "status", "--database-url="+db), "generic/g")
}

// The import progress bar shows rows and rows/s, bytes against the total, and an ETA; without a
// bar (not a terminal) only the summary line is printed.
func TestImportProgressShowsRateBytesAndETA(t *testing.T) {
	var out strings.Builder
	p, err := newImportProgress("always", 10_000, true, &out)
	require.NoError(t, err)
	p.sent(100, 2_500)
	p.sent(100, 2_500)
	bar := out.String()
	require.Contains(t, bar, "200 rows (")
	require.Contains(t, bar, "rows/s)")
	require.Contains(t, bar, "5.0/10 kB", "bytes sent of the total")
	require.Regexp(t, `\[[0-9a-z]+:[0-9a-z]+\]`, bar, "elapsed:remaining (ETA)")
	p.finish("rollout/x")
	require.Contains(t, out.String(), "appended 200 rows to rollout/x")

	out.Reset()
	quiet, err := newImportProgress("never", 10_000, true, &out)
	require.NoError(t, err)
	quiet.sent(7, 100)
	quiet.finish("rollout/x")
	require.Equal(t, 1, strings.Count(out.String(), "\n"))
	_, err = newImportProgress("sometimes", 1, true, &out)
	require.Error(t, err)
}

// The README's S3 recipe: `strata serve` with STRATA_DATA_URL set to scripts/s3.sh's URL (here
// the test S3 server's, with its credentials in the environment) keeps its stores in the bucket.
func TestServeKeepsItsStoresInAnS3Bucket(t *testing.T) {
	dataURL := testenv.S3(t)
	base, _ := startServeAt(t, dataURL)
	api := "--api-url=" + base
	require.Contains(t, mustCLI(t, "store", "create", api, "rollout/on-s3"), "rollout/on-s3 created")
	rows := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(rows, []byte(`{"id": "s1", "rollout_id": "r", "content": "in the bucket"}`+"\n"), 0o644))
	mustCLI(t, "append", api, "rollout/on-s3", rows)
	require.Contains(t, mustCLI(t, "get", api, "rollout/on-s3", "s1"), `"content": "in the bucket"`)
	info := mustCLI(t, "store", "list", api, "rollout")
	require.Contains(t, info, "s3://", "the store's URI names its place in the bucket")
	require.NotContains(t, info, "endpoint=", "and no connection options")
}
