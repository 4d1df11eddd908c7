// `strata store create|list|get|delete`: the store registry from the command line, through the
// HTTP API.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/client"
)

func storeCommand() *cobra.Command {
	var cfg clientConfig
	sub := func(usage, help string, extra func(*pflag.FlagSet), exec func(context.Context, *client.Client, []string) error) *cobra.Command {
		cmd := &cobra.Command{Use: usage, Short: help,
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := cfg.client()
				if err != nil {
					return err
				}
				return exec(cmd.Context(), c, args)
			}}
		if extra != nil {
			extra(cmd.Flags())
		}
		return cmd
	}
	var schema string
	var sealOnAdd bool
	var embeddingDim int
	var metric string
	var prefix string
	var limit int
	group := groupCommand("store create|list|get|delete [flags] ...", "Create, list, describe and delete stores (through the API).",
		sub("create [--schema JSON|@file] <kind>/<name>", "Create a store (generic stores need --schema).",
			func(fs *pflag.FlagSet) {
				fs.StringVar(&schema, "schema", "", "generic stores: the schema as JSON, or @file to read it from a file")
				fs.BoolVar(&sealOnAdd, "seal-on-add", false, "generic stores: seal after every add")
				fs.IntVar(&embeddingDim, "embedding-dim", 0, "context stores: the length of every embedding (0: any)")
				fs.StringVar(&metric, "distance-metric", "", "context stores: l2 (default), cosine or dot")
			},
			func(ctx context.Context, c *client.Client, args []string) error {
				kind, name, err := oneStoreArg(args)
				if err != nil {
					return err
				}
				opts := client.CreateOptions{SealOnAdd: sealOnAdd, EmbeddingDim: embeddingDim, DistanceMetric: metric}
				if schema != "" {
					if opts.Schema, err = readJSONArg(schema); err != nil {
						return fmt.Errorf("--schema: %w", err)
					}
				}
				s, created, err := c.CreateStore(ctx, kind, name, opts)
				if err != nil {
					return err
				}
				verb := "created"
				if !created {
					verb = "exists (same definition)"
				}
				fmt.Printf("%s/%s %s: %s\n", kind, s.Name, verb, s.URI)
				return nil
			}),
		sub("list [--prefix P] <kind>", "List stores of a kind.",
			func(fs *pflag.FlagSet) {
				fs.StringVar(&prefix, "prefix", "", "only names starting with this")
				fs.IntVar(&limit, "limit", 0, "stop after this many stores (0 = all)")
			},
			func(ctx context.Context, c *client.Client, args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("usage: strata store list [--prefix P] rollout|generic")
				}
				kind, err := client.ParseKind(args[0])
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tURI")
				n, cursor := 0, ""
				for {
					page, err := c.ListStores(ctx, kind, prefix, cursor, 1000)
					if err != nil {
						return err
					}
					for _, s := range page.Stores {
						if limit > 0 && n >= limit {
							return tw.Flush()
						}
						fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.URI)
						n++
					}
					if page.Next == "" {
						return tw.Flush()
					}
					cursor = page.Next
				}
			}),
		sub("get <kind>/<name>", "Describe a store (JSON).", nil,
			func(ctx context.Context, c *client.Client, args []string) error {
				kind, name, err := oneStoreArg(args)
				if err != nil {
					return err
				}
				s, err := c.GetStore(ctx, kind, name)
				if err != nil {
					return err
				}
				return printJSON(s)
			}),
		sub("delete <kind>/<name>", "Delete a store (soft delete; maintenance purges the data later).", nil,
			func(ctx context.Context, c *client.Client, args []string) error {
				kind, name, err := oneStoreArg(args)
				if err != nil {
					return err
				}
				if err := c.DeleteStore(ctx, kind, name); err != nil {
					return err
				}
				fmt.Printf("%s/%s deleted\n", kind, name)
				return nil
			}),
	)
	cfg.register(group.PersistentFlags()) // the endpoint flags belong to every store command
	return group
}

// oneStoreArg parses the single <kind>/<name> argument.
func oneStoreArg(args []string) (client.Kind, string, error) {
	if len(args) != 1 {
		return "", "", fmt.Errorf("want one <kind>/<name> argument, got %d", len(args))
	}
	return client.ParseRef(args[0])
}

// readJSONArg returns s as JSON, reading it from a file when it starts with '@'.
func readJSONArg(s string) (json.RawMessage, error) {
	data := []byte(s)
	if path, ok := strings.CutPrefix(s, "@"); ok {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("not valid JSON")
	}
	return data, nil
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
