// `strata context add|search|retrieve|get|update|delete|related`: a context store's agent memory
// from the command line, through the API. Answers print as indented JSON (lance-context's DTO
// shapes); vectors are given as comma-separated numbers.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/contexts"
)

func contextCommand() *cobra.Command {
	var cfg clientConfig
	var (
		text, vector, externalID, role, metadata, filters, relation string
		limit                                                       int
		flush, includeExpired, includeRetired, relationships        bool
	)
	sub := func(name, usage, help string, args int, run func(ctx context.Context, c *client.Client, a []string) (any, error)) *cobra.Command {
		return &cobra.Command{
			Use:   name + " [flags] " + usage,
			Short: help,
			RunE: func(cmd *cobra.Command, a []string) error {
				if len(a) != args {
					return fmt.Errorf("usage: strata context %s %s", name, usage)
				}
				c, err := cfg.client()
				if err != nil {
					return err
				}
				v, err := run(cmd.Context(), c, a)
				if err != nil {
					return err
				}
				return printJSON(v)
			},
		}
	}
	optional := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	record := func() (contexts.AddRecord, error) {
		r := contexts.AddRecord{TextPayload: optional(text), ExternalID: optional(externalID), Role: optional(role)}
		var err error
		if r.Embedding, err = parseVector(vector); err != nil {
			return r, err
		}
		if metadata != "" {
			doc, err := readJSONArg(metadata)
			if err != nil {
				return r, fmt.Errorf("--metadata: %w", err)
			}
			r.Metadata = doc
		}
		return r, nil
	}
	filterDoc := func() (json.RawMessage, error) {
		if filters == "" {
			return nil, nil
		}
		return readJSONArg(filters)
	}
	limitPtr := func() *int {
		if limit <= 0 {
			return nil
		}
		return &limit
	}
	group := groupCommand("context <add|search|retrieve|get|update|delete|related> [flags] <name> ...",
		"Add, search and retrieve the agent memory of a context store.",
		sub("add", "<name>", "Add one record (--text, --vector, --external-id, --role, --metadata); an --external-id that is held already is a conflict (use upsert).", 1,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				r, err := record()
				if err != nil {
					return nil, err
				}
				return c.AddContextRecords(ctx, a[0], []contexts.AddRecord{r}, flush)
			}),
		sub("upsert", "<name>", "Insert a record, or replace the one holding its --external-id (required).", 1,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				r, err := record()
				if err != nil {
					return nil, err
				}
				return c.UpsertContextRecord(ctx, a[0], r, flush)
			}),
		sub("search", "<name>", "The records nearest to --vector (--limit, --filters, --include-expired, --include-retired).", 1,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				q, err := parseVector(vector)
				if err != nil {
					return nil, err
				}
				f, err := filterDoc()
				if err != nil {
					return nil, err
				}
				return c.SearchContext(ctx, a[0], contexts.SearchRequest{Query: q, Limit: limitPtr(), Filters: f,
					IncludeExpired: includeExpired, IncludeRetired: includeRetired, IncludeRelationships: relationships})
			}),
		sub("retrieve", "<name>", "Hybrid retrieval: --text and/or --vector, fused by reciprocal rank fusion.", 1,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				v, err := parseVector(vector)
				if err != nil {
					return nil, err
				}
				f, err := filterDoc()
				if err != nil {
					return nil, err
				}
				return c.RetrieveContext(ctx, a[0], contexts.RetrieveRequest{Text: optional(text), Vector: v, Limit: limitPtr(), Filters: f,
					IncludeExpired: includeExpired, IncludeRetired: includeRetired, IncludeRelationships: relationships})
			}),
		sub("get", "<name> <id>", "One record by id (or by --external-id, with id '-'); null when absent.", 2,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				if a[1] == "-" {
					return c.ContextRecordByExternalID(ctx, a[0], externalID)
				}
				return c.ContextRecord(ctx, a[0], a[1])
			}),
		sub("retire", "<name> <id>", "Retire a record now (a successor with retired_at set supersedes it).", 2,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				now := time.Now().UTC()
				return c.UpdateContextRecord(ctx, a[0], contexts.UpdateRequest{ID: &a[1], Patch: contexts.Patch{RetiredAt: &now}}, flush)
			}),
		sub("delete", "<name> <id>", "Delete a record by id (or by --external-id, with id '-').", 2,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				if a[1] == "-" {
					return c.DeleteContextRecordByExternalID(ctx, a[0], externalID, flush)
				}
				return c.DeleteContextRecord(ctx, a[0], a[1], flush)
			}),
		sub("related", "<name> <target_id>", "Records with a relationship to target_id (--relation narrows).", 2,
			func(ctx context.Context, c *client.Client, a []string) (any, error) {
				return c.RelatedContextRecords(ctx, a[0], a[1], relation, client.ContextListOptions{Limit: limit,
					IncludeExpired: includeExpired, IncludeRetired: includeRetired})
			}),
	)
	cfg.register(group.PersistentFlags())
	fs := group.PersistentFlags()
	fs.StringVar(&text, "text", "", "the record's text, or the retrieve query")
	fs.StringVar(&vector, "vector", "", "an embedding or query vector: comma-separated numbers")
	fs.StringVar(&externalID, "external-id", "", "the record's external id")
	fs.StringVar(&role, "role", "", "the record's role (default user)")
	fs.StringVar(&metadata, "metadata", "", "the record's metadata: JSON, or @file")
	fs.StringVar(&filters, "filters", "", "search/retrieve filters: a JSON object, or @file")
	fs.StringVar(&relation, "relation", "", "related: only this relation")
	fs.IntVar(&limit, "limit", 0, "results to answer (default 10 for search and retrieve)")
	fs.BoolVar(&flush, "flush", false, "seal the write: every worker sees it at once")
	fs.BoolVar(&includeExpired, "include-expired", false, "include expired records")
	fs.BoolVar(&includeRetired, "include-retired", false, "include retired and superseded records")
	fs.BoolVar(&relationships, "relationships", false, "search/retrieve: answer the records' relationships")
	return group
}

// parseVector reads "0.1,0.2,0.3" (nil for "").
func parseVector(s string) ([]float32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]float32, len(parts))
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil {
			return nil, fmt.Errorf("--vector: %q is not a number", p)
		}
		out[i] = float32(f)
	}
	return out, nil
}
