// `strata tail <kind>/<name>`: follow a store's change feed, one JSON line per row (with _seq
// and _op), as a named consumer (committing each batch once printed) or from now; and
// `strata snapshot create|list|delete`: read tokens over several stores.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/client"
)

func tailCommand() *cobra.Command {
	var cfg clientConfig
	var opts client.FeedOptions
	var follow bool
	fs := pflag.NewFlagSet("strata tail", pflag.ContinueOnError)
	cfg.register(fs)
	fs.StringVar(&opts.Consumer, "consumer", "", "read as this named consumer (created at the feed's end if it does not exist), committing each batch once printed")
	fs.StringVar(&opts.Cursor, "cursor", "", "start after this cursor")
	fs.StringVar(&opts.Start, "start", "now", "without --consumer or --cursor: now or earliest")
	fs.IntVar(&opts.Limit, "limit", 0, "rows per batch (0 = the server's default)")
	fs.StringVar(&opts.CompleteBy, "complete-by", "", "deliver complete groups: rows with equal values of this column")
	fs.IntVar(&opts.GroupSize, "group-size", 0, "with --complete-by: rows that make a group complete")
	fs.DurationVar(&opts.GroupTimeout, "group-timeout", 0, "with --complete-by: deliver a group incomplete after this long")
	fs.BoolVar(&follow, "follow", true, "keep waiting for rows (false: print what is there and the cursor, then exit)")
	cmd := &cobra.Command{
		Use:   "tail <kind>/<name>",
		Short: "Follow a store's change feed: every row sealed from now on (or after a cursor), one JSON line each.",
		Example: `  strata tail rollout/exp-1
  strata tail rollout/exp-1 --consumer trainer --complete-by prompt_id --group-size 8
  strata tail generic/evals --start earliest --follow=false`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("usage: strata tail <kind>/<name>")
			}
			kind, name, err := client.ParseRef(args[0])
			if err != nil {
				return err
			}
			c, err := cfg.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if opts.Consumer != "" {
				if _, err := c.CreateConsumer(ctx, kind, name, opts.Consumer, opts.Start); err != nil && !client.IsConflict(err) {
					return err
				}
			}
			out := bufio.NewWriter(os.Stdout)
			print := func(b client.FeedBatch) error {
				enc := json.NewEncoder(out)
				for _, r := range b.Rows {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return out.Flush()
			}
			if !follow {
				b, err := c.Changes(ctx, kind, name, opts)
				if err != nil {
					return err
				}
				if err := print(b); err != nil {
					return err
				}
				if opts.Consumer != "" {
					if err := c.Commit(ctx, kind, name, opts.Consumer, b.Cursor); err != nil {
						return err
					}
				}
				fmt.Fprintln(os.Stderr, "cursor:", b.Cursor)
				return nil
			}
			err = c.Tail(ctx, kind, name, opts, print)
			if ctx.Err() != nil {
				return nil // interrupted
			}
			return err
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

func snapshotCommand() *cobra.Command {
	return groupCommand("snapshot", "Read tokens: one consistent read of several stores, on any worker, until they expire.",
		snapshotCreateCommand(), snapshotListCommand(), snapshotDeleteCommand())
}

func snapshotCreateCommand() *cobra.Command {
	var cfg clientConfig
	var ttl time.Duration
	fs := pflag.NewFlagSet("strata snapshot create", pflag.ContinueOnError)
	cfg.register(fs)
	fs.DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token can be read")
	cmd := &cobra.Command{
		Use:     "create <kind>/<name>...",
		Short:   "Take a read token over the stores named and print it (read with ?snapshot=<id>).",
		Example: `  strata snapshot create rollout/exp-1 generic/evals --ttl 48h`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("usage: strata snapshot create <kind>/<name> [<kind>/<name> …]")
			}
			c, err := cfg.client()
			if err != nil {
				return err
			}
			snap, err := c.CreateSnapshot(cmd.Context(), args, ttl)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(snap)
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

func snapshotListCommand() *cobra.Command {
	var cfg clientConfig
	fs := pflag.NewFlagSet("strata snapshot list", pflag.ContinueOnError)
	cfg.register(fs)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the live read tokens.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cfg.client()
			if err != nil {
				return err
			}
			list, err := c.Snapshots(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTORES\tCREATED\tEXPIRES")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.ID, s.StoreCount, s.CreatedAt.UTC().Format(time.RFC3339), s.ExpiresAt.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

func snapshotDeleteCommand() *cobra.Command {
	var cfg clientConfig
	fs := pflag.NewFlagSet("strata snapshot delete", pflag.ContinueOnError)
	cfg.register(fs)
	cmd := &cobra.Command{
		Use:   "delete <id>",
		Short: "Release a read token now.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("usage: strata snapshot delete <id>")
			}
			c, err := cfg.client()
			if err != nil {
				return err
			}
			return c.DeleteSnapshot(cmd.Context(), args[0])
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}
