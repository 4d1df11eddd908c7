// `strata dev`: the whole local service in one process — the HTTP API on :3000, the maintenance
// worker and its Temporal Schedules — for `make run` and laptops. Same flags as `strata serve`,
// with --maintenance-worker on.
package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func devCommand() *cobra.Command {
	var cfg serveConfig
	fs := pflag.NewFlagSet("strata dev", pflag.ContinueOnError)
	cfg.registerWith(fs, true)
	cmd := &cobra.Command{
		Use:   "dev [flags]",
		Short: "Run the API, the maintenance worker and its schedules in one process (local development).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			fmt.Printf("Strata UI:       http://%s/ui/ (stores, records, SQL)\n", cfg.ListenAddr)
			fmt.Printf("Strata API:      http://%s/api/v1/health\n", cfg.ListenAddr)
			fmt.Printf("OpenAPI:         http://%s/api/v1/openapi.json\n", cfg.ListenAddr)
			fmt.Printf("Metrics:         http://%s/metrics\n", cfg.ListenAddr)
			if cfg.MaintenanceWorker {
				fmt.Printf("Temporal Web UI: %s (maintenance workflows, Schedules page: strata-sweep)\n", cfg.TemporalUIURL)
			}
			return serve(ctx, cfg)
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}
