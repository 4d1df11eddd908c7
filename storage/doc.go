// Package storage owns Strata's data on object storage: the object-store abstraction, the
// versioned base table (Parquet fragments, deletion vectors, JSON manifests committed by
// put-if-absent), the exact key index, the MemWAL write path and the merge memory budget. It
// knows nothing of HTTP, Temporal or PostgreSQL. See docs/format/ for the on-storage formats.
package storage
