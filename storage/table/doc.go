// Package table is Strata's versioned columnar base table: immutable Parquet fragments,
// roaring-bitmap deletion vectors, an exact paged key index on the key column, and one JSON
// manifest per version committed with PutIfAbsent. The format is specified in
// docs/format/table.md; this package is its only writer.
//
// Concurrency model: a Table handle holds no lock across I/O. Every writer (Upsert, Compact,
// BuildKeyIndex) prepares against a manifest it has read, writes new immutable files, and commits
// by creating the next manifest version with PutIfAbsent. If another writer created that version
// first, the loser reloads the latest manifest and re-validates (re-prepares) against it, a
// bounded number of times. Correctness never depends on callers serialising writers; the
// orchestrator only avoids wasted work.
package table
