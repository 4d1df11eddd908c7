// `strata mcp`: the Model Context Protocol server over a Strata API endpoint's context stores
// (package contextmcp), on stdio for an agent that starts it, or on streamable HTTP (--listen).
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/strata-store/strata/contextmcp"
)

func mcpCommand() *cobra.Command {
	var cfg clientConfig
	var store, listen string
	cmd := &cobra.Command{
		Use:   "mcp [--store NAME] [--listen ADDR]",
		Short: "Serve context-store tools to agents over MCP (stdio, or streamable HTTP with --listen).",
		Long: "An MCP server whose tools (context_add, context_update, context_search, context_retrieve, context_get,\n" +
			"context_relate, context_retire) work on the context stores of the API at --api-url. Without --listen it\n" +
			"speaks on stdin/stdout, for an agent that starts it; with --listen it serves streamable HTTP at that address.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return fmt.Errorf("usage: strata mcp [--store NAME] [--listen ADDR]")
			}
			c, err := cfg.client()
			if err != nil {
				return err
			}
			srv := contextmcp.New(c, contextmcp.Options{Store: store, Version: version})
			if listen == "" {
				return srv.Run(cmd.Context(), &mcp.StdioTransport{})
			}
			return serveMCPHTTP(cmd.Context(), listen, contextmcp.HTTPHandler(srv))
		},
	}
	cfg.register(cmd.Flags())
	cmd.Flags().StringVar(&store, "store", "", "the context store a tool call works on when it names none")
	cmd.Flags().StringVar(&listen, "listen", "", "serve streamable HTTP at this address (host:port) instead of stdio")
	return cmd
}

// serveMCPHTTP serves h at addr until ctx ends, then shuts down within 10 s.
func serveMCPHTTP(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(os.Stderr, "strata mcp: streamable HTTP on http://%s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serveErr := <-done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return err
}
