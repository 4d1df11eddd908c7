// Package catalog owns Strata's PostgreSQL catalog: the store registry (which stores exist, where
// their data lives, their declared schema) and the store/shard statistics the maintenance sweeps
// choose work from. It knows nothing of HTTP, Temporal or the table format.
//
// Schema changes are versioned SQL files under migrations/, embedded in the binary and applied at
// Open by jackc/tern (migrate.go). Every query a request or a sweep makes is written to stay a few
// milliseconds at a million stores (an index read in order that stops at its limit): see the
// index comments in the migrations and the P5 benchmark. Operator summaries (TenantSummaries)
// read every stats row.
package catalog
