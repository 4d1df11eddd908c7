// Package storage owns Strata's data on object storage: the object-store abstraction
// (objstore), the Parquet fragment format (fragment), the versioned base table (deletion
// vectors, the exact key index, JSON manifests committed by put-if-absent: table), the
// write-ahead shards (shard), the store that unions them (lsm) and the merge memory budget. It
// knows nothing of HTTP, Temporal or PostgreSQL. See docs/format/ for the on-storage formats.
package storage
