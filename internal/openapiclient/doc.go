// Package openapiclient proves the OpenAPI document the API serves is complete enough to
// generate a working client: its test validates the document (kin-openapi), generates a Go client
// from it (oapi-codegen) into a temporary package beside this one, and drives a real server with
// that client (testdata/drive_test.go.txt). Nothing generated is kept; Strata's own Go client is
// package client.
package openapiclient
