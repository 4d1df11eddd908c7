// Package shard is one write-ahead shard of a store: the durable path of the one process that
// appends to it, and the objects every process reads from it (docs/format/memwal.md).
//
// Layout under the store's prefix:
//
//	_shards/<shard>                         marker: the shard exists (cheap shard listing)
//	_heads/<shard>.<20d>                    the shard's newest manifest version, written before
//	                                        each commit (heads.go): one listing for all shards
//	_wal/<shard>/manifest/<20d>.json        shard manifest chain, committed with put-if-absent
//	_wal/<shard>/segments/<20d>-<20d>.wal   WAL segments (epoch, first position): one checksummed
//	                                        frame per group commit, appended in place and synced,
//	                                        when the object store writes in place (local disk)
//	_wal/<shard>/entries/<20d>.arrows       WAL entry objects (Arrow IPC stream), one per group
//	                                        commit, on stores that cannot (and claims' fences);
//	                                        frames and entries hold the rows until their
//	                                        generation is merged
//	_wal/<shard>/gens/<20d>-<rand>.keys     a sealed generation: its sorted keys, _seq, tombstone
//	                                        flags and (entry, row) of each key's newest row
//
// The files, in the order a writer's life goes: config.go (what a writer is given), claim.go
// (taking the shard over, fencing, replay), writer.go (enqueue, group commit, seal),
// segmentwriter.go and segment.go (WAL segments), entries.go (WAL entry encoding), memtable.go,
// keyfile.go, manifest.go and heads.go (what a seal writes), reader.go (reading generations back, for any
// process), merged.go (what a merge does to the shard), gc.go with segmentlife.go and
// entrylife.go (WAL garbage), writebuffer.go (the process-wide bound on unsealed bytes),
// validate.go (what may enter the WAL), check.go (invariants, for tests and tools).
package shard
