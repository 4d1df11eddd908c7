// Resolving a key's newest version across the sources of a store, for point reads and scans.
//
// A key may have a version in this process's memtables, in any shard's pending generations and
// in the base table; the one with the highest _seq wins, and a winning tombstone means the key
// does not exist.
//
// Vanishing rule: a merge may commit and delete a pending generation's objects (key file, WAL
// entries, segments) after a reader took its snapshot. The reader then gets objstore.ErrNotFound
// for an object its snapshot lists; the rows are in a table version newer than the one it read,
// so it neither skips the generation (that would serve an older row) nor fails: it starts again
// on a fresh snapshot (readFresh), which no longer lists the generation.
package lsm

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

// source names where a version of a key lives.
type source uint8

const (
	sourceNone       source = iota
	sourceMemtable          // this process's memtables
	sourceGeneration        // a pending generation (its key file, then the WAL rows it points to)
	sourceTable             // the base table (through its key index)
)

// version is one version of a key, in one source.
type version struct {
	src  source
	key  string
	seq  uint64
	tomb bool
	mem  shard.MemRow // sourceMemtable: the row (its record retained by whoever holds the version)
	// sourceGeneration: the generation, its shard, its key file and the key's index in it.
	gen   shard.Generation
	shard string
	keys  *shard.KeyFile
	row   int
	ref   table.RowRef // sourceTable
}

// supersedes reports whether v is newer than cur (any version supersedes none).
func (v version) supersedes(cur version) bool {
	return v.src != sourceNone && (cur.src == sourceNone || v.seq > cur.seq)
}

// generationVersion is the version of key i of a generation's key file.
func generationVersion(sh string, g shard.Generation, k *shard.KeyFile, i int) version {
	return version{src: sourceGeneration, key: k.Keys[i], seq: k.Seqs[i], tomb: k.Tombs[i], gen: g, shard: sh, keys: k, row: i}
}

// tableVersion is the version a key-index entry describes.
func tableVersion(r table.RowRef) version {
	return version{src: sourceTable, key: r.Key, seq: r.Seq, tomb: r.Tombstone, ref: r}
}

// memtableVersion is the version a memtable row holds.
func memtableVersion(r shard.MemRow) version {
	return version{src: sourceMemtable, key: r.Key, seq: r.Seq, tomb: r.Tomb, mem: r}
}

// pendingRow returns the record and row holding a memtable or generation version (the record is
// owned by the memtable view or by rows).
func pendingRow(ctx context.Context, v version, rows *shard.RowReader) (arrow.RecordBatch, int, error) {
	if v.src == sourceMemtable {
		return v.mem.Rec, v.mem.Row, nil
	}
	rec, row, err := rows.Row(ctx, v.shard, v.gen, v.keys, v.row)
	if err != nil {
		return nil, 0, vanished(err)
	}
	return rec, row, nil
}

// errVanished: an object of a pending generation the read's snapshot lists was deleted by a merge
// that committed after the snapshot was taken (see the vanishing rule above).
var errVanished = errors.New("lsm: a pending generation was merged during the read")

// vanished maps a miss on a pending generation's object to errVanished; other errors pass.
func vanished(err error) error {
	if errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("%w: %w", errVanished, err)
	}
	return err
}

// maxReadAttempts bounds how often one read starts again on a fresh snapshot. Each attempt after
// the first needs another merge of the same store to commit while the read runs, so the bound is
// reached only under merges back to back; the read then fails as overloaded (retryable).
const maxReadAttempts = 8

// readFresh runs read, starting it again on a fresh snapshot while it reports errVanished.
func readFresh[T any](s *Store, read func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := read()
		if !errors.Is(err, errVanished) {
			return v, err
		}
		if attempt == maxReadAttempts {
			var zero T
			return zero, fmt.Errorf("%w: merges kept replacing the pending generations during the read (%d attempts): %w", ErrOverloaded, attempt, err)
		}
		s.metrics.readsResnapshotted.Inc()
	}
}
