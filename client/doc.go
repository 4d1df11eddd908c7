// Package client is the Go client of Strata's HTTP data API (the routes under /api/v1). Other Go
// programs import it to create stores, append rows (JSON or Arrow IPC), read them back and
// trigger maintenance; the `strata` CLI is built on it.
//
// Every method takes a context and returns *Error for an answer carrying the API's error
// envelope ({"error":{"code","message"}}), so callers can branch on Status or Code. A Client is
// safe for concurrent use.
package client
