// Package memwal is the write path and LSM read path of a store: per-worker write-ahead shards in
// front of the store's base table (storage/table).
//
// Layout under the store's prefix (docs/format/memwal.md):
//
//	_shards/<shard>                         marker: the shard exists (cheap shard listing)
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
// One writer per shard, enforced by epoch fencing on storage. Appends are durable (a WAL frame
// is synced, or a WAL entry exists) before they are acknowledged, enter the memtable at once (read-your-writes on this
// worker) and become visible to other workers when sealed into a generation. Reads take the
// newest _seq of a key across the memtable, every shard's generations and the base table. A WAL
// merge folds a shard's oldest generations into the base table and advances that shard's
// watermark in the same table commit.
package memwal
