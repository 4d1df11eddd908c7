// `strata maint <op> <kind>/<name>`: queue a maintenance operation on a store's Temporal
// workflow from the command line, through the API's admin route (so it needs only the API URL
// and, when the server sets one, the admin token; a store that does not exist fails at once).
// --wait runs it and prints its result or its failure.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/workflows"
)

// maintOps maps the CLI's short names to operations.
var maintOps = map[string]workflows.Op{
	"merge": workflows.OpMergeWAL, "index": workflows.OpBuildKeyIndex, "compact": workflows.OpCompact,
	"cleanup": workflows.OpCleanupVersions, "stats": workflows.OpStatsRefresh,
}

func maintCommand() *cobra.Command {
	var cfg clientConfig
	var maxPasses int
	var wait bool
	fs := pflag.NewFlagSet("strata maint", pflag.ContinueOnError)
	cfg.register(fs)
	fs.IntVar(&maxPasses, "max-passes", 0, "merge: stop after this many merge passes (0 = until drained)")
	fs.BoolVar(&wait, "wait", false, "wait until the operation has run (bounded by the server's --request-timeout) and print its result or failure")
	cmd := &cobra.Command{
		Use:   "maint [--wait] [--max-passes N] merge|index|compact|cleanup|stats <kind>/<name>",
		Short: "Queue (or run, with --wait) maintenance on a store's Temporal workflow, through the API.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, req, err := parseMaintArgs(args)
			if err != nil {
				return err
			}
			c, err := cfg.client()
			if err != nil {
				return err
			}
			return runMaint(ctx, os.Stdout, c, store, req.Op, maxPasses, wait)
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

// runMaint queues (or runs, when wait) op on the store and reports the outcome on out.
func runMaint(ctx context.Context, out io.Writer, c *client.Client, store workflows.StoreRef, op workflows.Op, maxPasses int, wait bool) error {
	kind := store.Kind
	if !wait {
		if maxPasses > 0 {
			return fmt.Errorf("--max-passes needs --wait (a queued merge runs until the shards are drained)")
		}
		run, err := c.RequestMaintenance(ctx, kind, store.Name, string(op))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "queued %s on workflow %s (run %s)\n", op, run.WorkflowID, run.RunID)
		return nil
	}
	res, err := c.RunMaintenance(ctx, kind, store.Name, string(op), maxPasses)
	if err != nil {
		return err
	}
	r := res.Result
	var parts []string
	for _, f := range []struct {
		name string
		v    int64
	}{{"generations_merged", int64(r.GenerationsMerged)}, {"rows_merged", r.RowsMerged}, {"fragments_removed", int64(r.FragmentsRemoved)},
		{"fragments_added", int64(r.FragmentsAdded)}, {"versions_deleted", int64(r.VersionsDeleted)}, {"files_deleted", int64(r.FilesDeleted)}, {"bytes_deleted", r.BytesDeleted},
		{"table_version", int64(r.TableVersion)}} {
		if f.v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f.name, f.v))
		}
	}
	if len(parts) == 0 {
		parts = []string{"nothing to do"}
	}
	fmt.Fprintf(out, "%s on %s/%s done (workflow %s): %s\n", op, store.Kind, store.Name, res.WorkflowID, strings.Join(parts, " "))
	return nil
}

func parseMaintArgs(args []string) (workflows.StoreRef, workflows.Request, error) {
	if len(args) != 2 {
		return workflows.StoreRef{}, workflows.Request{}, fmt.Errorf("usage: strata maint [--wait] merge|index|compact|cleanup|stats <kind>/<name>")
	}
	op, ok := maintOps[args[0]]
	if !ok {
		return workflows.StoreRef{}, workflows.Request{}, fmt.Errorf("unknown operation %q (merge, index, compact, cleanup, stats)", args[0])
	}
	kindName, name, ok := strings.Cut(args[1], "/")
	if !ok {
		return workflows.StoreRef{}, workflows.Request{}, fmt.Errorf("store %q: want <kind>/<name>", args[1])
	}
	kind, err := catalog.ParseKind(kindName)
	if err != nil {
		return workflows.StoreRef{}, workflows.Request{}, err
	}
	if err := catalog.ValidateName(name); err != nil {
		return workflows.StoreRef{}, workflows.Request{}, err
	}
	return workflows.StoreRef{Kind: kind, Name: name}, workflows.Request{Op: op}, nil
}
