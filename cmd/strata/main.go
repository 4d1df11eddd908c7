// Command strata is Strata's single binary: `strata serve` runs the HTTP data API (optionally
// with the maintenance worker), `strata worker` runs the Temporal maintenance worker, `strata
// dev` runs both for local development; `strata store|append|get|scan` use the API through the
// Go client, `strata maint` queues maintenance, `strata status` reads the catalog's stats and
// `strata version` prints the build. Every flag can also be set as an environment variable: the flag
// name upper-cased with '-' turned into '_' and the prefix STRATA_ (--database-url ->
// STRATA_DATABASE_URL). A flag on the command line wins over the environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// envPrefix is the prefix of every environment variable that sets a flag.
const envPrefix = "STRATA"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "strata:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	root := rootCommand()
	if err := root.Parse(args); err != nil {
		return err
	}
	return root.Run(ctx)
}

func rootCommand() *ffcli.Command {
	fs := flag.NewFlagSet("strata", flag.ContinueOnError)
	return &ffcli.Command{
		Name:       "strata",
		ShortUsage: "strata <subcommand> [flags]",
		ShortHelp:  "Strata stores ML records in columnar tables and keeps them healthy.",
		FlagSet:    fs,
		Options:    []ff.Option{ff.WithEnvVarPrefix(envPrefix)},
		Subcommands: []*ffcli.Command{
			serveCommand(),
			devCommand(),
			workerCommand(),
			maintCommand(),
			storeCommand(),
			appendCommand(),
			getCommand(),
			scanCommand(),
			datagenCommand(),
			statusCommand(),
			versionCommand(),
		},
		Exec: func(context.Context, []string) error { return flag.ErrHelp },
	}
}

func versionCommand() *ffcli.Command {
	return &ffcli.Command{
		Name:       "version",
		ShortUsage: "strata version",
		ShortHelp:  "Print the version.",
		Exec: func(context.Context, []string) error {
			fmt.Println("strata", version)
			return nil
		},
	}
}
