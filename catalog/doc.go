// Package catalog owns Strata's PostgreSQL catalog: the store registry (which stores exist, where
// their data lives, their declared schema) and the store/shard statistics the maintenance sweeps
// choose work from. It knows nothing of HTTP, Temporal or the table format.
//
// Schema changes are versioned SQL files under migrations/, embedded in the binary and applied at
// Open by jackc/tern (migrate.go). Every query here is written to stay a few milliseconds at
// 100k+ stores: see the index comments in the migrations and the P5 benchmark.
package catalog
