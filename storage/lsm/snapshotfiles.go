// Snapshot files: one snapshot of a store split the way an engine that reads Parquet itself takes
// it (DuckDB for SQL, package sqlquery/duckrun): the base table's fragments as files on the local
// disk, each with the rows deleted from it, and the WAL's newest version of every key it holds,
// deletes included, streamed with their _seq. Newest per key across the two is the engine's to
// apply: a base row is live unless it is a tombstone or a WAL version of its key has a higher
// _seq; a WAL row is live unless it is a tombstone or the base table holds its key with a higher
// _seq. That is exactly the rows a scan of the same snapshot answers.
//
// Ordering rule: as for snapshot scans (snapshotscan.go), a merge that removes a generation the
// WAL stream still reads starts the whole read again, and begin is called again first.
package lsm

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

// SnapshotFiles is the base-table half of a split snapshot.
type SnapshotFiles struct {
	TableVersion uint64
	Fragments    []FragmentFile
	WALVersions  int // the WAL versions the stream holds (deletes included)
	// BaseMaxSeq is the highest _seq in the base table; WALMinSeq the lowest of the WAL
	// versions. When WALMinSeq > BaseMaxSeq (the usual case: what is pending is newer than
	// what was merged), every WAL version supersedes the base row of its key.
	BaseMaxSeq, WALMinSeq uint64
}

// FragmentFile is one fragment of the base table: its local file, its rows, and the positions
// of those deleted, ascending.
type FragmentFile struct {
	Path    string
	Rows    int64
	Deleted []uint32
}

// OnLocalDisk reports whether the store's base table is on this machine's disk, so that
// ScanSnapshotFiles can hand out its fragments as files.
func (s *Store) OnLocalDisk() bool {
	_, ok := s.tbl.FragmentFile(table.Fragment{Path: "probe"})
	return ok
}

// ScanSnapshotFiles reads one snapshot split in two (see the file comment): begin gets the base
// table's fragments (none for SourceWAL), then emitWAL the WAL's newest versions in key order
// (none for SourceBase), in batches holding the named user columns with the key first, then
// table.SeqColumn (uint64) and table.TombstoneColumn (bool). Batches are owned by the scan.
// The store must be on a local disk (OnLocalDisk).
func (s *Store) ScanSnapshotFiles(ctx context.Context, columns []string, source Source, begin func(SnapshotFiles) error, emitWAL func(arrow.RecordBatch) error) error {
	if !s.OnLocalDisk() {
		return fmt.Errorf("lsm: the store's base table is not on a local disk")
	}
	names := []string{s.keyColumn}
	for _, c := range columns {
		if c != s.keyColumn {
			names = append(names, c)
		}
	}
	names, err := s.columns(names)
	if err != nil {
		return err
	}
	_, err = readFresh(ctx, s, func() (struct{}, error) {
		return struct{}{}, s.scanSnapshotFilesOnce(ctx, names, source, begin, emitWAL)
	})
	return err
}

func (s *Store) scanSnapshotFilesOnce(ctx context.Context, names []string, source Source, begin func(SnapshotFiles) error, emitWAL func(arrow.RecordBatch) error) error {
	mem, snap, gens, err := s.sourceView(ctx, source, readPoint{}, "", "")
	if err != nil {
		return err
	}
	defer mem.Release()
	var versions []version
	if source != SourceBase {
		sortMemRows(mem.Rows)
		versions = newestVersions(nil, mem.Rows, gens, "", "", true, "", true) // every pending key, deletes too
	}
	files := SnapshotFiles{WALVersions: len(versions)}
	for i, v := range versions {
		if i == 0 || v.seq < files.WALMinSeq {
			files.WALMinSeq = v.seq
		}
	}
	if snap.Table != nil {
		files.TableVersion, files.BaseMaxSeq = snap.Table.Version, snap.Table.MaxSeq
		if source != SourceWAL {
			for _, f := range snap.Table.Fragments {
				path, ok := s.tbl.FragmentFile(f)
				if !ok {
					return fmt.Errorf("lsm: fragment %s is not a local file", f.Path)
				}
				deleted, err := s.tbl.DeletedRows(ctx, f)
				if err != nil {
					return err
				}
				files.Fragments = append(files.Fragments, FragmentFile{Path: path, Rows: f.Rows, Deleted: deleted})
			}
		}
	}
	if err := begin(files); err != nil {
		return err
	}
	genRows := s.shards.NewRowReader()
	defer genRows.Release()
	for len(versions) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(versions), snapshotScanChunk)
		if err := s.emitWALChunk(ctx, snap, versions[:n], genRows, names, emitWAL); err != nil {
			return err
		}
		versions = versions[n:]
	}
	return nil
}

// emitWALChunk gathers the versions' rows (the named columns) and emits them with their _seq and
// tombstone flags.
func (s *Store) emitWALChunk(ctx context.Context, snap *Snapshot, versions []version, genRows *shard.RowReader, names []string, emit func(arrow.RecordBatch) error) error {
	out := newPageBuilder(s, names, names)
	defer out.release()
	if err := out.add(ctx, snap, versions, genRows, nil, len(versions)); err != nil {
		return err
	}
	rec, err := out.finish()
	if err != nil {
		return err
	}
	defer rec.Release()
	seqs := array.NewUint64Builder(s.mem)
	defer seqs.Release()
	tombs := array.NewBooleanBuilder(s.mem)
	defer tombs.Release()
	for _, v := range versions {
		seqs.Append(v.seq)
		tombs.Append(v.tomb)
	}
	seqArr, tombArr := seqs.NewArray(), tombs.NewArray()
	defer seqArr.Release()
	defer tombArr.Release()
	fields := append(slices.Clone(rec.Schema().Fields()),
		arrow.Field{Name: table.SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: table.TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean})
	cols := append(slices.Clone(rec.Columns()), seqArr, tombArr)
	withSeq := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer withSeq.Release()
	return emit(withSeq)
}
