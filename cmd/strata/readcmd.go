// `strata get` and `strata scan`: read rows through the API. scan writes JSONL, Parquet or an
// aligned table, following the keyset cursor page by page.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/kinds"
)

func getCommand() *cobra.Command {
	var cfg clientConfig
	fs := pflag.NewFlagSet("strata get", pflag.ContinueOnError)
	cfg.register(fs)
	cmd := &cobra.Command{
		Use:   "get <kind>/<name> <id>",
		Short: "Print one row as JSON.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) != 2 {
				return fmt.Errorf("usage: strata get <kind>/<name> <id>")
			}
			kind, name, err := client.ParseRef(args[0])
			if err != nil {
				return err
			}
			c, err := cfg.client()
			if err != nil {
				return err
			}
			row, err := c.Get(ctx, kind, name, args[1])
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			_ = json.Indent(&buf, row, "", "  ")
			fmt.Println(buf.String())
			return nil
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

type scanConfig struct {
	client   clientConfig
	format   string
	output   string
	filter   string
	limit    int
	pageSize int
}

func scanCommand() *cobra.Command {
	var cfg scanConfig
	fs := pflag.NewFlagSet("strata scan", pflag.ContinueOnError)
	cfg.client.register(fs)
	fs.StringVar(&cfg.format, "format", "jsonl", "output: jsonl, parquet or table")
	fs.StringVar(&cfg.output, "output", "-", "output file (- = stdout; parquet needs a file)")
	fs.StringVar(&cfg.filter, "filter", "", `a SQL predicate, e.g. "step > 5 AND role = 'user'", or column equalities as JSON, e.g. {"rollout_id":"r1"}`)
	fs.IntVar(&cfg.limit, "limit", 0, "stop after this many rows (0 = all)")
	fs.IntVar(&cfg.pageSize, "page-size", 1000, "rows per request")
	cmd := &cobra.Command{
		Use:   "scan [flags] <kind>/<name>",
		Short: "Read every row (in id order) as JSONL, Parquet or a table.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			kind, name, err := oneStoreArg(args)
			if err != nil {
				return err
			}
			c, err := cfg.client.client()
			if err != nil {
				return err
			}
			opts := client.ScanOptions{PageSize: cfg.pageSize, Limit: cfg.limit}
			if f := strings.TrimSpace(cfg.filter); strings.HasPrefix(f, "{") || strings.HasPrefix(f, "@") {
				if opts.Filter, err = readJSONArg(f); err != nil {
					return fmt.Errorf("--filter: %w", err)
				}
			} else if f != "" {
				opts.Filter = json.RawMessage(f) // a SQL predicate, sent as it is
			}
			if cfg.format == "parquet" && cfg.output == "-" {
				return fmt.Errorf("--format parquet needs --output <file>")
			}
			out := io.Writer(os.Stdout)
			if cfg.output != "-" {
				f, err := os.Create(cfg.output)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			counted := &countingWriter{w: out}
			switch cfg.format {
			case "jsonl":
				err = scanJSONL(ctx, c, kind, name, opts, counted)
			case "table":
				err = scanTable(ctx, c, kind, name, opts, counted)
			case "parquet":
				err = scanParquet(ctx, c, kind, name, opts, counted)
			default:
				return fmt.Errorf("--format %q: want jsonl, parquet or table", cfg.format)
			}
			if err == nil && cfg.output != "-" {
				// Written to a file: say what was written (stdout stays the data alone).
				fmt.Fprintf(os.Stderr, "wrote %s/%s to %s (%s, %d bytes)\n", kind, name, cfg.output, cfg.format, counted.n)
			}
			return err
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func scanJSONL(ctx context.Context, c *client.Client, kind client.Kind, name string, opts client.ScanOptions, out io.Writer) error {
	w := bufio.NewWriter(out)
	err := c.Scan(ctx, kind, name, opts, func(row json.RawMessage) error {
		w.Write(row)
		return w.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// tableColumns are the columns a table of kind's rows shows, in the store's schema order (binary
// columns, which listings leave out, excluded).
func tableColumns(ctx context.Context, c *client.Client, kind client.Kind, name string) ([]string, error) {
	var schema *arrow.Schema
	switch kind {
	case client.KindRollout:
		schema = kinds.RolloutSchema
	case client.KindDatagen:
		schema = kinds.DatagenSchema
	default:
		info, err := c.GetStore(ctx, kind, name)
		if err != nil {
			return nil, err
		}
		if schema, err = kinds.ParseSchemaSpec(info.Schema); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, f := range schema.Fields() {
		if f.Type.ID() != arrow.BINARY && f.Type.ID() != arrow.LARGE_BINARY && !strings.HasPrefix(f.Name, "_") {
			out = append(out, f.Name)
		}
	}
	return out, nil
}

// scanTable prints rows as aligned columns in the store's schema order, leaving out the
// columns no printed row has a value in; long values are cut at 40 characters. Rows are held
// until the end (a table is for a screenful: use --limit).
func scanTable(ctx context.Context, c *client.Client, kind client.Kind, name string, opts client.ScanOptions, out io.Writer) error {
	all, err := tableColumns(ctx, c, kind, name)
	if err != nil {
		return err
	}
	var rows []map[string]json.RawMessage
	err = c.Scan(ctx, kind, name, opts, func(raw json.RawMessage) error {
		var row map[string]json.RawMessage
		if err := json.Unmarshal(raw, &row); err != nil {
			return err
		}
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return err
	}
	var columns []string
	for _, col := range all {
		for _, row := range rows {
			if v, ok := row[col]; ok && string(v) != "null" {
				columns = append(columns, col)
				break
			}
		}
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(columns, "\t")))
	for _, row := range rows {
		cells := make([]string, len(columns))
		for i, col := range columns {
			cells[i] = tableCell(row[col])
		}
		if _, err := fmt.Fprintln(tw, strings.Join(cells, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

func tableCell(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	s = strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	if s == "" || s == "null" {
		s = "-"
	}
	return s
}

// scanParquet writes the rows as one Parquet file (zstd): rollout pages arrive as Arrow IPC;
// generic rows are decoded against the store's declared schema.
func scanParquet(ctx context.Context, c *client.Client, kind client.Kind, name string, opts client.ScanOptions, out io.Writer) error {
	var w *pqarrow.FileWriter
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	write := func(rec arrow.RecordBatch) error {
		if w == nil {
			var err error
			if w, err = pqarrow.NewFileWriter(rec.Schema(), out, props, pqarrow.DefaultWriterProps()); err != nil {
				return err
			}
		}
		return w.WriteBuffered(rec)
	}
	var err error
	if kind == client.KindRollout {
		err = c.ScanArrow(ctx, kind, name, opts, write)
	} else {
		err = scanGenericRecords(ctx, c, name, opts, write)
	}
	if err != nil {
		return err
	}
	if w == nil {
		return fmt.Errorf("%s/%s has no rows: nothing written", kind, name)
	}
	return w.Close()
}

// scanGenericRecords pages generic rows and converts each page to a record batch of the store's
// schema (binary columns, which listings leave out, excluded).
func scanGenericRecords(ctx context.Context, c *client.Client, name string, opts client.ScanOptions, fn func(arrow.RecordBatch) error) error {
	info, err := c.GetStore(ctx, client.KindGeneric, name)
	if err != nil {
		return err
	}
	full, err := kinds.ParseSchemaSpec(info.Schema)
	if err != nil {
		return err
	}
	var fields []arrow.Field
	for _, f := range full.Fields() {
		if f.Type.ID() != arrow.BINARY && f.Type.ID() != arrow.LARGE_BINARY {
			fields = append(fields, f)
		}
	}
	schema := arrow.NewSchema(fields, nil)
	var page []json.RawMessage
	pageSize := max(opts.PageSize, 1)
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		data, _ := json.Marshal(page)
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("convert rows to the store schema: %w", err)
		}
		defer rec.Release()
		page = page[:0]
		return fn(rec)
	}
	err = c.Scan(ctx, client.KindGeneric, name, opts, func(row json.RawMessage) error {
		page = append(page, row)
		if len(page) >= pageSize {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}
