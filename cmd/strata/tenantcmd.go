// `strata tenant quota set|list|delete`: tenants' quotas and maintenance weights, through the
// admin API. A tenant is a store-name prefix (the server's --tenant-depth and --tenant-separator);
// `strata status --by-tenant` shows their usage.
package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/client"
)

func tenantCommand() *cobra.Command {
	return groupCommand("tenant", "Tenants (store-name prefixes): quotas on their appends and their share of maintenance.",
		groupCommand("quota", "A tenant's quotas (429 QUOTA_EXCEEDED past them) and maintenance weight.",
			tenantQuotaSetCommand(), tenantQuotaListCommand(), tenantQuotaDeleteCommand()))
}

func tenantQuotaSetCommand() *cobra.Command {
	var cfg clientConfig
	var limits client.TenantLimits
	fs := pflag.NewFlagSet("strata tenant quota set", pflag.ContinueOnError)
	cfg.register(fs)
	fs.Int64Var(&limits.MaxRows, "max-rows", 0, "rows in the tenant's stores (base table plus unmerged row versions; 0: no limit)")
	fs.Int64Var(&limits.MaxBytes, "max-bytes", 0, "bytes in the tenant's stores (0: no limit)")
	fs.Float64Var(&limits.MaxAppendRowsPerSecond, "max-append-rows-per-second", 0, "appended rows per second across every worker (0: no limit)")
	fs.Int64Var(&limits.MaxPendingGenerations, "max-pending-generations", 0, "sealed generations waiting for a merge across the tenant's stores (0: no limit)")
	fs.IntVar(&limits.Weight, "weight", 1, "the tenant's share of maintenance against other tenants' (1..1000)")
	cmd := &cobra.Command{
		Use:     "set <tenant>",
		Short:   "Set a tenant's quotas and weight (replacing what it had).",
		Example: `  strata tenant quota set team-a --max-rows 100000000 --max-append-rows-per-second 50000 --weight 2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cfg.client()
			if err != nil {
				return err
			}
			q, err := c.SetTenantQuota(cmd.Context(), args[0], limits)
			if err != nil {
				return err
			}
			return printQuotas([]client.TenantQuota{q})
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

func tenantQuotaListCommand() *cobra.Command {
	var cfg clientConfig
	fs := pflag.NewFlagSet("strata tenant quota list", pflag.ContinueOnError)
	cfg.register(fs)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every tenant quota.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cfg.client()
			if err != nil {
				return err
			}
			qs, err := c.TenantQuotas(cmd.Context())
			if err != nil {
				return err
			}
			return printQuotas(qs)
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

func tenantQuotaDeleteCommand() *cobra.Command {
	var cfg clientConfig
	fs := pflag.NewFlagSet("strata tenant quota delete", pflag.ContinueOnError)
	cfg.register(fs)
	cmd := &cobra.Command{
		Use:   "delete <tenant>",
		Short: "Remove a tenant's quotas (its appends are no longer limited; its weight returns to 1).",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cfg.client()
			if err != nil {
				return err
			}
			if err := c.DeleteTenantQuota(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Printf("removed the quota of tenant %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

func printQuotas(qs []client.TenantQuota) error {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tMAX ROWS\tMAX BYTES\tMAX APPEND ROWS/S\tMAX PENDING GENS\tWEIGHT")
	for _, q := range qs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%g\t%d\t%d\n", q.Tenant, q.MaxRows, q.MaxBytes, q.MaxAppendRowsPerSecond, q.MaxPendingGenerations, q.Weight)
	}
	if len(qs) == 0 {
		fmt.Fprintln(tw, "(no quotas)")
	}
	return tw.Flush()
}
