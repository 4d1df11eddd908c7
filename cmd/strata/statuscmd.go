// `strata status`: per-store maintenance state read from the catalog's stats (pending
// generations, fragments, index coverage, last merge/compaction) and the stores whose
// maintenance is failing (operation, error type, since when, last error), for operators.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/client"
)

func statusCommand() *cobra.Command {
	var databaseURL, kind, prefix string
	var limit int
	var failingOnly bool
	var api clientConfig
	fs := pflag.NewFlagSet("strata status", pflag.ContinueOnError)
	api.register(fs)
	fs.BoolVar(&failingOnly, "failing", false, "only the stores whose maintenance is failing (after its retries), with the last error")
	fs.StringVar(&databaseURL, "database-url", "", "read the catalog (PostgreSQL) directly instead of through the API's admin route (operators)")
	fs.StringVar(&kind, "kind", "", "only stores of this kind (rollout, generic or datagen)")
	fs.StringVar(&prefix, "prefix", "", "only names starting with this")
	fs.IntVar(&limit, "limit", 100, "at most this many stores")
	cmd := &cobra.Command{
		Use:   "status [--kind K] [--prefix P] [--limit N] [--failing]",
		Short: "Per-store pending generations, fragments and last maintenance, and failing maintenance (through the API, or --database-url).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var k catalog.Kind
			if kind != "" {
				var err error
				if k, err = catalog.ParseKind(kind); err != nil {
					return err
				}
			}
			if databaseURL == "" {
				c, err := api.client()
				if err != nil {
					return err
				}
				rep, err := c.Status(ctx, client.StatusOptions{Kind: k, Prefix: prefix, Limit: limit, Failing: failingOnly})
				if err != nil {
					return err
				}
				return printReport(os.Stdout, rep, failingOnly, time.Now())
			}
			cat, err := catalog.Open(ctx, databaseURL)
			if err != nil {
				return err
			}
			defer cat.Close()
			failures, err := cat.ListFailures(ctx, limit)
			if err != nil {
				return err
			}
			if !failingOnly {
				st, err := cat.ListStoreStatus(ctx, k, catalog.ListOptions{Prefix: prefix, Limit: limit})
				if err != nil {
					return err
				}
				if err := printStatus(os.Stdout, st, time.Now()); err != nil {
					return err
				}
				if len(failures) == 0 {
					return nil
				}
				fmt.Println()
			}
			return printFailures(os.Stdout, failures, time.Now())
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

// printReport prints the API's status report as printStatus and printFailures print the
// catalog's.
func printReport(out io.Writer, rep client.StatusReport, failingOnly bool, now time.Time) error {
	var failures []catalog.MaintenanceFailure
	for _, f := range rep.Failures {
		failures = append(failures, catalog.MaintenanceFailure{Kind: catalog.Kind(f.Kind), Name: f.Name, Op: f.Op, ErrorType: f.ErrorType,
			Message: f.Message, Since: f.FailingSince, LastAt: f.LastFailedAt, Failures: f.Failures})
	}
	if !failingOnly {
		var st []catalog.StoreStatus
		for _, s := range rep.Stores {
			row := catalog.StoreStatus{Kind: catalog.Kind(s.Kind), Name: s.Name}
			if s.Observed {
				row.Stats = &catalog.StoreStats{PendingGenerations: s.PendingGenerations, OldestPendingAt: s.OldestPendingAt,
					Fragments: s.Fragments, IndexCoveredFragments: s.IndexCoveredFragments, BaseRows: s.BaseRows, DeletedRows: s.DeletedRows,
					TableVersion: s.TableVersion, LastMergeAt: s.LastMergeAt, LastCompactAt: s.LastCompactAt, LastCleanupAt: s.LastCleanupAt,
					DroppedBytes: s.GarbageBytes}
				if s.StatsUpdatedAt != nil {
					row.Stats.UpdatedAt = *s.StatsUpdatedAt
				}
			}
			st = append(st, row)
		}
		if err := printStatus(out, st, now); err != nil {
			return err
		}
		if len(failures) == 0 {
			return nil
		}
		fmt.Fprintln(out)
	}
	return printFailures(out, failures, now)
}

func printStatus(out io.Writer, st []catalog.StoreStatus, now time.Time) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tPENDING GENS\tOLDEST PENDING\tFRAGMENTS\tINDEXED\tROWS\tVERSION\tLAST MERGE\tLAST COMPACT\tGARBAGE\tLAST CLEANUP\tSTATS AGE")
	for _, s := range st {
		if s.Stats == nil {
			fmt.Fprintf(tw, "%s/%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\tnever observed\n", s.Kind, s.Name)
			continue
		}
		x := s.Stats
		fmt.Fprintf(tw, "%s/%s\t%d\t%s\t%d\t%d/%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Kind, s.Name, x.PendingGenerations,
			ago(x.OldestPendingAt, now), x.Fragments, x.IndexCoveredFragments, x.Fragments, x.BaseRows-x.DeletedRows,
			x.TableVersion, ago(x.LastMergeAt, now), ago(x.LastCompactAt, now), mib(x.GarbageBytes()), ago(x.LastCleanupAt, now),
			ago(&x.UpdatedAt, now))
	}
	if len(st) == 0 {
		fmt.Fprintln(tw, "(no stores)")
	}
	return tw.Flush()
}

// printFailures lists failing maintenance: which operation of which store, the error type and
// message of its latest failure, since when it fails and how often it failed since.
func printFailures(out io.Writer, fs []catalog.MaintenanceFailure, now time.Time) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAILING STORE\tOP\tERROR\tFAILING SINCE\tFAILED RUNS\tLAST ERROR")
	for _, f := range fs {
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%d\t%s\n", f.Kind, f.Name, f.Op, f.ErrorType, ago(&f.Since, now), f.Failures,
			strings.ReplaceAll(f.Message, "\n", " "))
	}
	if len(fs) == 0 {
		fmt.Fprintln(tw, "(no failing maintenance)")
	}
	return tw.Flush()
}

// mib renders a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// ago renders a timestamp as an age ("3m12s ago"), "-" when unset.
func ago(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return now.Sub(*t).Round(time.Second).String() + " ago"
}
