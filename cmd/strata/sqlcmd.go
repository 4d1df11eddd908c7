// `strata sql <kind>/<name> "SELECT …"`: one read-only SQL statement over a snapshot of a store
// (the table t), printed as an aligned table, JSON, or written as CSV or Parquet.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/client"
)

func sqlCommand() *cobra.Command {
	var cfg clientConfig
	var format, output, source string
	var limit int
	fs := pflag.NewFlagSet("strata sql", pflag.ContinueOnError)
	cfg.register(fs)
	fs.StringVar(&format, "format", "table", "output: table, json, csv or parquet")
	fs.StringVar(&output, "output", "-", "output file (- = stdout; parquet needs a file)")
	fs.StringVar(&source, "source", "all", "the rows t holds: all, base (the base table alone) or wal (rows not merged yet)")
	fs.IntVar(&limit, "limit", 0, "the most rows answered (0 = the server's cap)")
	cmd := &cobra.Command{
		Use:   `sql <kind>/<name> "SELECT …"`,
		Short: "Run one read-only SQL statement (DuckDB) over a snapshot of a store: the table t.",
		Example: `  strata sql rollout/exp-1 "SELECT rollout_id, avg(reward) FROM t GROUP BY rollout_id ORDER BY 2 DESC LIMIT 10"
  strata sql generic/evals "SELECT * FROM t WHERE step > 100" --format parquet --output evals.parquet`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return fmt.Errorf(`usage: strata sql <kind>/<name> "SELECT …"`)
			}
			kind, name, err := client.ParseRef(args[0])
			if err != nil {
				return err
			}
			if format == "parquet" && output == "-" {
				return fmt.Errorf("--format parquet needs --output <file>")
			}
			c, err := cfg.client()
			if err != nil {
				return err
			}
			out := io.Writer(os.Stdout)
			if output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			opts := client.QueryOptions{Source: source, Limit: limit}
			switch format {
			case "csv", "parquet":
				return c.QueryTo(cmd.Context(), kind, name, args[1], opts, format, out)
			case "json", "table":
			default:
				return fmt.Errorf("--format must be table, json, csv or parquet")
			}
			res, err := c.Query(cmd.Context(), kind, name, args[1], opts)
			if err != nil {
				return err
			}
			if format == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			return printQueryTable(out, res)
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

// printQueryTable writes the result as aligned columns (wide values folded), then a line that
// says how many rows and whether the result was cut.
func printQueryTable(out io.Writer, res client.QueryResult) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(res.Columns, "\t"))
	for _, row := range res.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			raw, _ := json.Marshal(v)
			cells[i] = tableCell(raw)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	note := ""
	if res.Truncated {
		note = " (cut: more rows match; --limit, or --format csv/parquet for all)"
	}
	_, err := fmt.Fprintf(out, "(%d rows%s)\n", res.RowCount, note)
	return err
}
