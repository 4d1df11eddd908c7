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

// version is one version of a key, in one source. It is small (a scan holds one per key of a
// page): what locates a pending row is a pointer into what the read already holds.
type version struct {
	key      string
	seq      uint64
	src      source
	tomb     bool
	row      int64         // sourceTable: the row in its fragment; sourceGeneration: the key's index in the key file
	fragment uint64        // sourceTable
	mem      *shard.MemRow // sourceMemtable: the row (its record retained by whoever holds the version)
	gen      *genView      // sourceGeneration: the generation, its shard and its key file
}

// supersedes reports whether v is newer than cur (any version supersedes none).
func (v version) supersedes(cur version) bool {
	return v.src != sourceNone && (cur.src == sourceNone || v.seq > cur.seq)
}

// ref is a sourceTable version's key-index entry.
func (v version) ref() table.RowRef {
	return table.RowRef{Key: v.key, Fragment: v.fragment, Row: v.row, Seq: v.seq, Tombstone: v.tomb}
}

// generationVersion is the version of key i of a generation's key file.
func generationVersion(g *genView, i int) version {
	k := g.keys
	return version{src: sourceGeneration, key: k.Keys[i], seq: k.Seqs[i], tomb: k.Tombs[i], gen: g, row: int64(i)}
}

// tableVersion is the version a key-index entry describes.
func tableVersion(r table.RowRef) version {
	return version{src: sourceTable, key: r.Key, seq: r.Seq, tomb: r.Tombstone, fragment: r.Fragment, row: r.Row}
}

// memtableVersion is the version a memtable row holds.
func memtableVersion(r *shard.MemRow) version {
	return version{src: sourceMemtable, key: r.Key, seq: r.Seq, tomb: r.Tomb, mem: r}
}

// pendingRow returns the record and row holding a memtable or generation version (the record is
// owned by the memtable view or by rows).
func pendingRow(ctx context.Context, v version, rows *shard.RowReader) (arrow.RecordBatch, int, error) {
	if v.src == sourceMemtable {
		return v.mem.Rec, v.mem.Row, nil
	}
	g := v.gen
	rec, row, err := rows.Row(ctx, g.shard, g.gen, g.keys, int(v.row))
	if err != nil {
		return nil, 0, vanished(err, g.shard, g.gen)
	}
	return rec, row, nil
}

// errVanished: an object of a pending generation the read's snapshot lists was deleted by a merge
// that committed after the snapshot was taken (see the vanishing rule above).
var errVanished = errors.New("lsm: a pending generation was merged during the read")

// vanishedError is a miss on an object of generation gen of shard, which a read's snapshot
// listed; it is errVanished.
type vanishedError struct {
	shard string
	gen   uint64
	err   error
}

func (e *vanishedError) Error() string {
	return fmt.Sprintf("%v: generation %d of shard %s: %v", errVanished, e.gen, e.shard, e.err)
}
func (e *vanishedError) Is(target error) bool { return target == errVanished }
func (e *vanishedError) Unwrap() error        { return e.err }

// vanished maps a miss on an object of generation g of shard sh to errVanished; other errors
// pass.
func vanished(err error, sh string, g shard.Generation) error {
	if errors.Is(err, objstore.ErrNotFound) {
		return &vanishedError{shard: sh, gen: g.Gen, err: err}
	}
	return err
}

// maxReadAttempts bounds how often one read starts again on a fresh snapshot. Each attempt after
// the first needs another merge of the same store to commit while the read runs, so the bound is
// reached only under merges back to back; the read then fails as overloaded (retryable).
const maxReadAttempts = 8

// readFresh runs read, starting it again on a fresh snapshot while it reports errVanished — but
// only while the generation whose object is missing was in fact merged: a generation still
// pending whose object is gone is damage, reported as ErrCorrupt at once rather than retried.
func readFresh[T any](ctx context.Context, s *Store, read func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := read()
		if !errors.Is(err, errVanished) {
			return v, err
		}
		var zero T
		var ve *vanishedError
		if errors.As(err, &ve) {
			if pending, perr := s.stillPending(ctx, ve.shard, ve.gen); perr != nil {
				return zero, perr
			} else if pending {
				return zero, fmt.Errorf("%w: %w (it is still pending merge)", ErrCorrupt, err)
			}
		}
		if attempt == maxReadAttempts {
			return zero, fmt.Errorf("%w: merges kept replacing the pending generations during the read (%d attempts): %w", ErrOverloaded, attempt, err)
		}
		s.metrics.readsResnapshotted.Inc()
	}
}

// stillPending reports whether generation gen of shard is still listed in the shard's latest
// manifest and above the table's watermark for it (not merged).
func (s *Store) stillPending(ctx context.Context, sh string, gen uint64) (bool, error) {
	m, err := s.shards.LatestManifest(ctx, sh)
	if err != nil || m == nil {
		return false, err
	}
	listed := false
	for _, g := range m.Generations {
		listed = listed || g.Gen == gen
	}
	if !listed {
		return false, nil
	}
	t, err := s.tbl.Latest(ctx)
	if err != nil {
		return false, err
	}
	return gen > t.WALWatermarks[sh], nil
}
