// Command strata is Strata's single binary: `strata serve` runs the HTTP data API (optionally
// with the maintenance worker), `strata worker` runs the Temporal maintenance worker, `strata
// dev` runs both for local development; `strata store|append|get|scan|datagen|context` use the
// API through the Go client, `strata mcp` serves context-store tools to agents over MCP, `strata
// maint` queues maintenance, `strata status` reads the catalog's stats and `strata version`
// prints the build. Commands are cobra commands: flags go anywhere on the line, `--help` works
// on every command, `strata completion bash|zsh|fish` prints shell completion. Every flag can
// also be set as an environment variable: the flag name upper-cased with '-' turned into '_' and
// the prefix STRATA_ (--database-url -> STRATA_DATABASE_URL). A flag on the command line wins
// over the environment.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/client"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// envPrefix is the prefix of every environment variable that sets a flag.
const envPrefix = "STRATA"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "strata: "+describe(err))
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	root := rootCommand()
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// groupCommand is a command whose subcommands do the work: alone it prints its help, and an
// unknown subcommand is an error (cobra's default for a nested group is its help, exit 0).
func groupCommand(use, short string, subcommands ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		}}
	cmd.AddCommand(subcommands...)
	return cmd
}

// envName is the environment variable that sets flag name.
func envName(flagName string) string {
	return envPrefix + "_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_", "/", "_").Replace(flagName))
}

// applyEnv sets every flag of cmd the command line left alone from its STRATA_* variable.
func applyEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" || err != nil {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, serr)
			}
		}
	})
	return err
}

func rootCommand() *cobra.Command {
	root := groupCommand("strata <command> [flags]", "Strata stores ML records in columnar tables and keeps them healthy.",
		serveCommand(),
		devCommand(),
		workerCommand(),
		maintCommand(),
		storeCommand(),
		appendCommand(),
		getCommand(),
		scanCommand(),
		sqlCommand(),
		tailCommand(),
		snapshotCommand(),
		datagenCommand(),
		contextCommand(),
		mcpCommand(),
		statusCommand(),
		tenantCommand(),
		versionCommand(),
	)
	// Errors are printed once, by main (with a hint), never with the usage text.
	root.SilenceUsage, root.SilenceErrors = true, true
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return applyEnv(cmd) }
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (see strata %s --help)", err, strings.TrimPrefix(cmd.CommandPath(), "strata "))
	})
	return root
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version.",
		RunE: func(*cobra.Command, []string) error {
			fmt.Println("strata", version)
			return nil
		},
	}
}

// describe is what the CLI prints for an error: the message once (the Go client's errors carry
// their own "strata:" prefix) and, for the common mistakes, what to do about it — decided by the
// error's type (an API answer's status, a refused connection, an unknown host), not its text;
// only cobra's own usage errors are plain text.
func describe(err error) string {
	msg := strings.TrimPrefix(err.Error(), "strata: ")
	var answer *client.Error
	var dns *net.DNSError
	var hint string
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dns):
		hint = "is a Strata server running at --api-url (STRATA_API_URL)? `make run` starts one on :3000"
	case errors.As(err, &answer) && answer.Status == http.StatusNotFound:
		hint = "`strata store list <kind>` lists the stores; `strata store create <kind>/<name>` makes one"
	case errors.As(err, &answer) && answer.Status == http.StatusUnauthorized:
		hint = "set --api-token (STRATA_API_TOKEN), or --admin-token for maintenance"
	case strings.HasPrefix(msg, "unknown command"), strings.HasPrefix(msg, "unknown flag"), strings.HasPrefix(msg, "unknown shorthand flag"):
		hint = "`strata --help` lists the commands"
	}
	if hint != "" && !errors.Is(err, context.Canceled) {
		return msg + "\n  hint: " + hint
	}
	return msg
}
