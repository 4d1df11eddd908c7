// `strata datagen item|failures|events|overview|roots`: the read lenses of a datagen store,
// printed as indented JSON (lance-context's DTO shapes).
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-store/strata/client"
)

func datagenCommand() *cobra.Command {
	var cfg clientConfig
	var loadBlobs bool
	sub := func(name, usage, help string, args int, run func(ctx context.Context, c *client.Client, args []string) (any, error)) *cobra.Command {
		return &cobra.Command{
			Use:   name + " [flags] " + usage,
			Short: help,
			RunE: func(cmd *cobra.Command, a []string) error {
				ctx := cmd.Context()
				if len(a) != args {
					return fmt.Errorf("usage: strata datagen %s %s", name, usage)
				}
				c, err := cfg.client()
				if err != nil {
					return err
				}
				v, err := run(ctx, c, a)
				if err != nil {
					return err
				}
				return printJSON(v)
			},
		}
	}
	group := groupCommand("datagen <item|failures|events|overview|roots> [flags] <name> ...",
		"Read a datagen store: an item's fold, failures or events, the run overview, root statuses.",
		sub("item", "<name> <item_id>", "Fold an item into its current state (null when never started).", 2,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				return c.DatagenItem(ctx, a[0], a[1], loadBlobs)
			}),
		sub("failures", "<name> <item_id>", "List an item's failures.", 2,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				return c.DatagenFailures(ctx, a[0], a[1])
			}),
		sub("events", "<name> <item_id>", "Print an item's raw events in item_seq order.", 2,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				return c.DatagenItemEvents(ctx, a[0], a[1])
			}),
		sub("overview", "<name>", "The run overview: root items by status, failures, completed steps.", 1,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				return c.DatagenOverview(ctx, a[0])
			}),
		sub("roots", "<name> <root_id,root_id,...>", "Classify roots by lifecycle status (never started: absent).", 2,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				return c.DatagenRootStatuses(ctx, a[0], strings.Split(a[1], ","))
			}),
	)
	// The endpoint flags and --load-blobs belong to every datagen command.
	cfg.register(group.PersistentFlags())
	group.PersistentFlags().BoolVar(&loadBlobs, "load-blobs", false, "item: inline blob bytes (base64) in the fold")
	return group
}
