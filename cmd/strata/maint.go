// `strata maint <op> <kind>/<name>`: queue a maintenance operation on a store's Temporal
// workflow from the command line (the same signal-with-start the sweep and the admin API use).
package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

// maintOps maps the CLI's short names to operations.
var maintOps = map[string]workflows.Op{
	"merge": workflows.OpMergeWAL, "index": workflows.OpBuildKeyIndex, "compact": workflows.OpCompact,
	"cleanup": workflows.OpCleanupVersions, "stats": workflows.OpStatsRefresh,
}

func maintCommand() *ffcli.Command {
	var cfg temporalConfig
	var maxPasses int
	var logLevel, logFormat string
	fs := flag.NewFlagSet("strata maint", flag.ContinueOnError)
	cfg.register(fs)
	fs.IntVar(&maxPasses, "max-passes", 0, "merge: stop after this many merge passes (0 = until drained)")
	registerLogFlags(fs, &logLevel, &logFormat)
	return &ffcli.Command{
		Name:       "maint",
		ShortUsage: "strata maint merge|index|compact|cleanup|stats <kind>/<name> [flags]",
		ShortHelp:  "Queue maintenance on a store's Temporal workflow.",
		FlagSet:    fs,
		Options:    []ff.Option{ff.WithEnvVarPrefix(envPrefix)},
		Exec: func(ctx context.Context, args []string) error {
			store, req, err := parseMaintArgs(args)
			if err != nil {
				return err
			}
			req.MaxPasses = maxPasses
			log, err := newLogger(logLevel, logFormat)
			if err != nil {
				return err
			}
			c, err := dialTemporal(cfg, log)
			if err != nil {
				return err
			}
			defer c.Close()
			run, err := worker.RequestMaintenance(ctx, c, store, req)
			if err != nil {
				return err
			}
			fmt.Printf("queued %s on workflow %s (run %s)\n", req.Op, store.WorkflowID(), run.GetRunID())
			return nil
		},
	}
}

func parseMaintArgs(args []string) (workflows.StoreRef, workflows.Request, error) {
	if len(args) != 2 {
		return workflows.StoreRef{}, workflows.Request{}, fmt.Errorf("usage: strata maint merge|index|compact|cleanup|stats <kind>/<name>")
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
	return workflows.StoreRef{Kind: string(kind), Name: name}, workflows.Request{Op: op}, nil
}
