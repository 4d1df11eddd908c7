// Snapshot scans: every live row of a store as of one moment, in key order, streamed as
// batches — what an SQL query over the store reads. A page scan (scan.go) takes a fresh snapshot
// per page; a snapshot scan holds one snapshot (the base-table version, the shards' pending
// generations and this process's memtable of the moment) for the whole read, so the rows it
// streams are exactly what one read at that moment answers.
//
// Ordering rule: when a merge removes a pending generation the snapshot still lists, the scan
// starts again from the beginning on a fresh snapshot, and says so first (begin): the caller
// throws away what it received. Nothing of an attempt is mixed with the next.
package lsm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/predicate"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

// SnapshotScanOptions select the rows and columns of a snapshot scan.
type SnapshotScanOptions struct {
	Columns []string       // user columns to stream (all when empty)
	Where   predicate.Expr // when set, only rows it holds for
	Source  Source         // the base table, the WAL, or both (the default)
	Version uint64         // a checkout of this base-table version (no WAL); 0 = the live view
	Cut     *Cut           // when set, read this cut (cut.go) instead of the live view
}

// SnapshotScanStart is what an attempt of a snapshot scan reads, told to begin.
type SnapshotScanStart struct {
	TableVersion uint64 // the base-table version of the snapshot
	Generations  int    // the pending generations it reads (0 for SourceBase or a checkout)
	MemtableRows int    // this process's memtable rows it reads
}

// snapshotScanChunk is the most base-table keys a snapshot scan gathers at once (one batch).
const snapshotScanChunk = 8192

// ScanSnapshot streams every live row of one snapshot in key order: begin is called before each
// attempt's first batch (a second call means the previous attempt's batches are void), emit with
// each batch (owned by the scan: emit retains what it keeps). It stops at the first error emit or
// begin returns, or when ctx is done.
func (s *Store) ScanSnapshot(ctx context.Context, opts SnapshotScanOptions, begin func(SnapshotScanStart) error, emit func(arrow.RecordBatch) error) error {
	names, err := s.columns(opts.Columns)
	if err != nil {
		return err
	}
	if opts.Source == SourceWAL && opts.Version != 0 {
		return fmt.Errorf("%w: a checkout of a base-table version has no WAL to read", table.ErrSchema)
	}
	read, err := s.readColumns(names, nil, opts.Where)
	if err != nil {
		return err
	}
	_, err = readFresh(ctx, s, func() (struct{}, error) {
		return struct{}{}, s.scanSnapshotOnce(ctx, opts, names, read, begin, emit)
	})
	return err
}

func (s *Store) scanSnapshotOnce(ctx context.Context, opts SnapshotScanOptions, names, read []string, begin func(SnapshotScanStart) error, emit func(arrow.RecordBatch) error) error {
	mem, snap, gens, err := s.sourceView(ctx, opts.Source, readPoint{opts.Version, opts.Cut}, "", "")
	if err != nil {
		return err
	}
	defer mem.Release()
	start := SnapshotScanStart{Generations: len(gens), MemtableRows: len(mem.Rows)}
	if snap.Table != nil {
		start.TableVersion = snap.Table.Version
	}
	if err := begin(start); err != nil {
		return err
	}
	genRows := s.shards.NewRowReader()
	defer genRows.Release()
	sortMemRows(mem.Rows)
	cursor := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		base, end, exhausted, err := s.baseChunk(ctx, snap, opts.Source, cursor, "", snapshotScanChunk)
		if err != nil {
			return err
		}
		live := chunkVersions(base, mem.Rows, gens, cursor, end, exhausted, "")
		if err := s.emitChunk(ctx, snap, live, genRows, names, read, opts.Where, emit); err != nil {
			return err
		}
		if exhausted {
			return nil
		}
		cursor = end
	}
}

// emitChunk gathers and filters one chunk's rows and emits them (nothing when none is left).
func (s *Store) emitChunk(ctx context.Context, snap *Snapshot, live []version, genRows *shard.RowReader, names, read []string, where predicate.Expr, emit func(arrow.RecordBatch) error) error {
	if len(live) == 0 {
		return nil
	}
	out := newPageBuilder(s, read, names)
	defer out.release()
	out.where = where
	if err := out.add(ctx, snap, live, genRows, nil, len(live)); err != nil {
		return err
	}
	if out.rows() == 0 {
		return nil
	}
	rec, err := out.finish()
	if err != nil {
		return err
	}
	defer rec.Release()
	return emit(rec)
}

// sortMemRows puts memtable rows in key order (each chunk takes its range by binary search).
func sortMemRows(rows []shard.MemRow) {
	slices.SortFunc(rows, func(a, b shard.MemRow) int { return strings.Compare(a.Key, b.Key) })
}
