// `strata status`: per-store maintenance state read from the catalog's stats (pending
// generations, fragments, index coverage, last merge/compaction) and the stores whose
// maintenance is failing (operation, error type, since when, last error), for operators.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
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
	var failingOnly, byTenant bool
	var tenantDepth int
	var tenantSeparator string
	var api clientConfig
	fs := pflag.NewFlagSet("strata status", pflag.ContinueOnError)
	api.register(fs)
	fs.BoolVar(&failingOnly, "failing", false, "only the stores whose maintenance is failing (after its retries), with the last error")
	fs.StringVar(&databaseURL, "database-url", "", "read the catalog (PostgreSQL) directly instead of through the API's admin route (operators)")
	fs.StringVar(&kind, "kind", "", "only stores of this kind (rollout, generic or datagen)")
	fs.StringVar(&prefix, "prefix", "", "only names starting with this")
	fs.IntVar(&limit, "limit", 100, "at most this many stores (tenants with --by-tenant)")
	fs.BoolVar(&byTenant, "by-tenant", false, "per tenant (store-name prefix): stores, rows, bytes, pending generations, merge backlog, quota and whether it is reached, most pending first")
	fs.IntVar(&tenantDepth, "tenant-depth", 1, "with --by-tenant and --database-url: the tenancy rule (through the API, the server's)")
	fs.StringVar(&tenantSeparator, "tenant-separator", ".", "with --by-tenant and --database-url: the tenancy rule's separator")
	cmd := &cobra.Command{
		Use:   "status [--kind K] [--prefix P] [--limit N] [--failing | --by-tenant]",
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
			if byTenant {
				return tenantStatus(cmd.Context(), api, databaseURL, catalog.Tenancy{Depth: tenantDepth, Separator: tenantSeparator}, limit)
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

// tenantStatus prints the tenants through the API, or from the catalog with its own tenancy rule.
func tenantStatus(ctx context.Context, api clientConfig, databaseURL string, tenancy catalog.Tenancy, limit int) error {
	var rep client.TenantsReport
	if databaseURL == "" {
		c, err := api.client()
		if err != nil {
			return err
		}
		if rep, err = c.Tenants(ctx, limit); err != nil {
			return err
		}
	} else {
		cat, err := catalog.Open(ctx, databaseURL)
		if err != nil {
			return err
		}
		defer cat.Close()
		sums, err := cat.TenantSummaries(ctx, tenancy, 8, time.Now().Add(-5*time.Minute), limit)
		if err != nil {
			return err
		}
		for _, s := range sums {
			t := client.TenantStatus{Tenant: s.Tenant, Stores: s.Stores, Rows: s.Rows, Bytes: s.Bytes,
				PendingGenerations: s.PendingGenerations, MergeBacklog: s.MergeBacklog}
			if q := s.Quota; q != nil {
				t.Quota = &client.TenantQuota{Tenant: q.Tenant, TenantLimits: client.TenantLimits{MaxRows: q.MaxRows, MaxBytes: q.MaxBytes,
					MaxAppendRowsPerSecond: q.MaxAppendRowsPerSecond, MaxPendingGenerations: q.MaxPendingGenerations, Weight: q.Weight}}
				t.OverQuota = q.OverQuota(s.TenantUsage)
			}
			rep.Tenants = append(rep.Tenants, t)
		}
	}
	return printTenants(os.Stdout, rep.Tenants)
}

// printTenants prints one line per tenant; a quota's limits show as used/limit.
func printTenants(out io.Writer, ts []client.TenantStatus) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tSTORES\tROWS\tBYTES\tPENDING GENS\tMERGE BACKLOG\tRATE QUOTA\tWEIGHT\tOVER QUOTA")
	limited := func(used, limit int64) string {
		if limit <= 0 {
			return strconv.FormatInt(used, 10)
		}
		return fmt.Sprintf("%d/%d", used, limit)
	}
	for _, t := range ts {
		var q client.TenantLimits
		if t.Quota != nil {
			q = t.Quota.TenantLimits
		}
		rate, weight, over := "-", max(q.Weight, 1), cmp.Or(t.OverQuota, "-")
		if q.MaxAppendRowsPerSecond > 0 {
			rate = fmt.Sprintf("%g rows/s", q.MaxAppendRowsPerSecond)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\n", cmp.Or(t.Tenant, "(all)"), t.Stores, limited(t.Rows, q.MaxRows),
			limited(t.Bytes, q.MaxBytes), limited(t.PendingGenerations, q.MaxPendingGenerations), t.MergeBacklog, rate, weight, over)
	}
	if len(ts) == 0 {
		fmt.Fprintln(tw, "(no tenants)")
	}
	return tw.Flush()
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
			row := catalog.StoreStatus{Kind: catalog.Kind(s.Kind), Name: s.Name, Shards: s.Shards}
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
	fmt.Fprintln(tw, "STORE\tSHARDS\tPENDING GENS\tOLDEST PENDING\tFRAGMENTS\tINDEXED\tROWS\tVERSION\tLAST MERGE\tLAST COMPACT\tGARBAGE\tLAST CLEANUP\tSTATS AGE")
	for _, s := range st {
		if s.Stats == nil {
			fmt.Fprintf(tw, "%s/%s\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\tnever observed\n", s.Kind, s.Name, s.Shards)
			continue
		}
		x := s.Stats
		fmt.Fprintf(tw, "%s/%s\t%d\t%d\t%s\t%d\t%d/%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Kind, s.Name, s.Shards, x.PendingGenerations,
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
