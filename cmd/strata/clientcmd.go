// Shared plumbing of the CLI commands that talk to the HTTP API through the Go client
// (store, append, get, scan): the endpoint and token flags, and store references.
package main

import (
	"github.com/spf13/pflag"

	"github.com/strata-store/strata/client"
)

// clientConfig locates the API; every field is a flag and a STRATA_* variable.
type clientConfig struct {
	APIURL     string
	APIToken   string
	AdminToken string
}

func (c *clientConfig) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.APIURL, "api-url", "http://127.0.0.1:3000", "base URL of a Strata API worker")
	fs.StringVar(&c.APIToken, "api-token", "", "bearer token of the data API")
	fs.StringVar(&c.AdminToken, "admin-token", "", "bearer token of the admin API")
}

func (c *clientConfig) client() (*client.Client, error) {
	return client.New(c.APIURL, client.WithToken(c.APIToken), client.WithAdminToken(c.AdminToken))
}
