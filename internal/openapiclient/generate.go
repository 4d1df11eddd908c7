// Package openapiclient is a Go client generated (oapi-codegen) from the OpenAPI document the
// API serves. It exists to prove the document is complete enough to generate a working client:
// its tests regenerate it from the current document (it must not have drifted) and drive a real
// server with it. Strata's own Go client is package client.
package openapiclient

//go:generate go run ./gen client.gen.go
