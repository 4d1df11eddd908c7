// `strata append <kind>/<name> <file>`: import a JSONL or Parquet file through the API in batches,
// with a progress bar (rows/s, bytes, ETA) on a terminal. Batches are sent one after another, so
// when an id repeats in the file the later line wins, as it would in one big append.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/client"
)

type appendConfig struct {
	client    clientConfig
	format    string
	batchRows int
	flush     bool
	progress  string
	// followRoute sends the batches to the store's preferred worker (GET …/route).
	followRoute bool
}

func appendCommand() *cobra.Command {
	var cfg appendConfig
	fs := pflag.NewFlagSet("strata append", pflag.ContinueOnError)
	cfg.client.register(fs)
	fs.StringVar(&cfg.format, "format", "auto", "input format: auto (by extension), jsonl or parquet")
	fs.IntVar(&cfg.batchRows, "batch-rows", 1000, "rows per append request")
	fs.BoolVar(&cfg.flush, "flush", true, "seal after the last batch, so every worker reads the rows at once")
	fs.StringVar(&cfg.progress, "progress", "auto", "progress bar: auto (on a terminal), always or never")
	fs.BoolVar(&cfg.followRoute, "follow-route", true, "send the rows to the store's preferred worker (as the server's route names it), so the store keeps few write shards")
	cmd := &cobra.Command{
		Use:   "append [flags] <kind>/<name> <file.jsonl|file.parquet|->",
		Short: "Append rows from a JSONL or Parquet file (- reads JSONL from stdin).",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) != 2 {
				return fmt.Errorf("usage: strata append [flags] <kind>/<name> <file>")
			}
			kind, name, err := client.ParseRef(args[0])
			if err != nil {
				return err
			}
			c, err := cfg.client.client()
			if err != nil {
				return err
			}
			return runAppend(ctx, c, kind, name, args[1], cfg, os.Stderr)
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

// importProgress reports rows and bytes sent; the bar is drawn only when enabled.
type importProgress struct {
	bar   *progressbar.ProgressBar
	start time.Time
	rows  int64
	out   io.Writer
}

func newImportProgress(mode string, total int64, unitBytes bool, out io.Writer) (*importProgress, error) {
	p := &importProgress{start: time.Now(), out: out}
	show := mode == "always"
	switch mode {
	case "auto":
		f, ok := out.(*os.File)
		show = ok && isatty.IsTerminal(f.Fd())
	case "always", "never":
	default:
		return nil, fmt.Errorf("--progress %q: want auto, always or never", mode)
	}
	if show {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(out),
			progressbar.OptionShowBytes(unitBytes),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), // ETA
			progressbar.OptionSetWidth(30),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(out) }),
		)
	}
	return p, nil
}

// sent records a batch: rows appended and how far through the input (bytes or rows) it is.
func (p *importProgress) sent(rows int64, advance int64) {
	p.rows += rows
	if p.bar != nil {
		rate := float64(p.rows) / max(time.Since(p.start).Seconds(), 1e-3)
		p.bar.Describe(fmt.Sprintf("%d rows (%.0f rows/s)", p.rows, rate)) // then Add64 redraws with it
		_ = p.bar.Add64(advance)
	}
}

func (p *importProgress) finish(store string) {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
	elapsed := time.Since(p.start)
	fmt.Fprintf(p.out, "appended %d rows to %s in %s (%.0f rows/s)\n", p.rows, store, elapsed.Round(time.Millisecond),
		float64(p.rows)/max(elapsed.Seconds(), 1e-3))
}

func runAppend(ctx context.Context, c *client.Client, kind client.Kind, name, path string, cfg appendConfig, out io.Writer) error {
	if cfg.batchRows <= 0 {
		return fmt.Errorf("--batch-rows must be positive")
	}
	// The store first: a mistyped name fails before a line of the input is read.
	if _, err := c.GetStore(ctx, kind, name); err != nil {
		return err
	}
	if cfg.followRoute {
		// A worker the client cannot reach, or an older server without routes: stay on the
		// one named by --api-url (routing is advice).
		if routed, err := c.Routed(ctx, kind, name); err == nil && routed != c {
			hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if _, err := routed.Health(hctx); err == nil {
				c = routed
			}
			cancel()
		}
	}
	format := cfg.format
	if format == "auto" {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".parquet", ".pq":
			format = "parquet"
		default:
			format = "jsonl"
		}
	}
	var err error
	var p *importProgress
	switch format {
	case "jsonl":
		p, err = appendJSONL(ctx, c, kind, name, path, cfg, out)
	case "parquet":
		p, err = appendParquet(ctx, c, kind, name, path, cfg, out)
	default:
		return fmt.Errorf("--format %q: want auto, jsonl or parquet", cfg.format)
	}
	if err != nil {
		if p != nil && p.rows > 0 {
			fmt.Fprintf(out, "\nstopped after %d rows were appended\n", p.rows)
		}
		return err
	}
	if cfg.flush {
		if err := c.Flush(ctx, kind, name); err != nil {
			return err
		}
	}
	p.finish(string(kind) + "/" + name)
	return nil
}

// appendJSONL sends the file's non-blank lines, each one JSON object, in batches.
func appendJSONL(ctx context.Context, c *client.Client, kind client.Kind, name, path string, cfg appendConfig, out io.Writer) (*importProgress, error) {
	in, size := io.Reader(os.Stdin), int64(-1)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in = f
	}
	p, err := newImportProgress(cfg.progress, size, true, out)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(in, 1<<20)
	var batch []json.RawMessage
	var batchBytes int64
	lineNo := 0
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := c.Append(ctx, kind, name, batch, false); err != nil {
			return fmt.Errorf("batch ending at line %d: %w", lineNo, err)
		}
		p.sent(int64(len(batch)), batchBytes)
		batch, batchBytes = batch[:0], 0
		return nil
	}
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			batchBytes += int64(len(line))
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 { // ReadBytes returns a fresh slice
				if trimmed[0] != '{' || !json.Valid(trimmed) {
					return p, fmt.Errorf("%s line %d: not a JSON object", path, lineNo)
				}
				batch = append(batch, json.RawMessage(trimmed))
			}
			if len(batch) >= cfg.batchRows {
				if err := send(); err != nil {
					return p, err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return p, send()
		}
		if err != nil {
			return p, err
		}
	}
}

// appendParquet streams the file's row groups in batches: as Arrow IPC for rollout and datagen
// stores (a datagen file holds the log's columns), as JSON rows for generic stores (whose API
// takes JSON).
func appendParquet(ctx context.Context, c *client.Client, kind client.Kind, name, path string, cfg appendConfig, out io.Writer) (*importProgress, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(cfg.batchRows)}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	p, err := newImportProgress(cfg.progress, pf.NumRows(), false, out)
	if err != nil {
		return nil, err
	}
	for rr.Next() {
		rec := rr.RecordBatch()
		if kind == client.KindRollout || kind == client.KindDatagen {
			_, err = c.AppendArrow(ctx, kind, name, rec, false)
		} else {
			var rows []json.RawMessage
			if rows, err = recordToJSONRows(rec); err == nil {
				_, err = c.Append(ctx, kind, name, rows, false)
			}
		}
		if err != nil {
			return p, fmt.Errorf("batch after %d rows: %w", p.rows, err)
		}
		p.sent(rec.NumRows(), rec.NumRows())
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return p, err
	}
	return p, nil
}

// recordToJSONRows turns each row of rec into a JSON object.
func recordToJSONRows(rec arrow.RecordBatch) ([]json.RawMessage, error) {
	var sb strings.Builder
	if err := array.RecordToJSON(rec, &sb); err != nil {
		return nil, err
	}
	var rows []json.RawMessage
	for line := range strings.SplitSeq(strings.TrimSpace(sb.String()), "\n") {
		if line != "" {
			rows = append(rows, json.RawMessage(line))
		}
	}
	return rows, nil
}
