// Package lsm is a store as api/, activities/ and the open-store cache see it: a log-structured
// merge of this process's memtables, every shard's sealed generations (storage/shard) and the
// base table (storage/table).
//
//   - store.go: open, append and delete (through this process's shard writer), flush, close;
//   - snapshot.go: what one read sees (shard manifests first, then the table);
//   - resolve.go: the newest _seq of a key across the sources, and starting a read again when a
//     merge overtakes it;
//   - read.go (point reads) and scan.go (keyset-paginated scans);
//   - merge.go: folding a shard's oldest generations into the table;
//   - maintenance.go: the maintenance jobs (merge, key index, compaction, version cleanup) with
//     their ordering rules;
//   - feed.go and feedcursor.go: the change feed (rows sealed after a cursor, complete groups);
//     cut.go: a store's state at one moment, readable later (read tokens); retention.go: keeping
//     merged generations for the feed's consumers and the cuts that still need them.
//
// The object layout and the commit protocol are in docs/format/memwal.md and docs/format/table.md.
package lsm
