// Package api owns Strata's HTTP surface (Echo v4): routes, request/response DTOs, the JSON error
// envelope and HTTP metrics. Handlers call into storage/ and catalog/; nothing below this package
// knows about HTTP.
package api
