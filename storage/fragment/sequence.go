// Reading a fragment's rows in order, a batch of bounded size at a time (a compaction's sources).
// Memory stays one decoded batch of about SequenceBatchBytes and the encoded pages it came from
// (a run's pages on a store that reads into the caller's memory, the row group's elsewhere) —
// never the fragment whole, and not a decoded row group either (row groups are sized for scans).
package fragment

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/strata-store/strata/storage/objstore"
)

// SequenceBatchBytes is about how much decoded Arrow data a Sequence holds at once: a row group
// is decoded in batches of about this size.
const SequenceBatchBytes = 256 << 10

// footerBatchRows is how many rows of row group rg hold about SequenceBatchBytes by its footer's
// uncompressed size (which understates dictionary-encoded columns); ok=false when the footer
// gives no size.
func footerBatchRows(rg *metadata.RowGroupMetaData) (n int64, ok bool) {
	rows, bytes := rg.NumRows(), rg.TotalByteSize()
	if rows <= 0 || bytes <= 0 {
		return 0, false
	}
	return min(rows, SequenceBatchBytes*rows/bytes), true
}

// streamBatchRows is the batch length that decodes about SequenceBatchBytes of row group rg
// through pqarrow (fragments without a page index).
func streamBatchRows(rg *metadata.RowGroupMetaData) int64 {
	n, ok := footerBatchRows(rg)
	if !ok {
		return RowGroupRows
	}
	return max(MinRowGroupRows, n)
}

// firstRunRows caps a row group's first run from its pages, decoded before its width is
// measured.
const firstRunRows = MinRowGroupRows

// Sequence walks one fragment's rows in order, a batch at a time. It owns what it holds of the
// row group it is in; Release frees it. It is used by one goroutine.
//
// A row group with a page index (every fragment this release writes) is decoded a run of rows at
// a time straight from its pages. On a store that reads into the caller's memory (a local
// filesystem) each run fetches only the pages holding it, into pooled buffers given back when
// the run is decoded, so between runs the sequence holds nothing encoded; elsewhere (an object
// store, where every range is a request), and when a nested column with values needs pqarrow,
// the row group's encoded bytes are fetched whole when it is opened and held until its last run.
// Either way no column readers are held. Each run is sized to about SequenceBatchBytes by the
// bytes per row the previous run measured, since a row group's sizes in the footer say little
// about its decoded rows (a dictionary-encoded column of long repeated values takes a few bytes
// there and its full width in Arrow). Older fragments stream through pqarrow's column readers,
// in batches sized from the footer.
type Sequence struct {
	rd   *Reader
	f    Ref
	ft   *Footer
	cols Columns
	next int // the next row group to open

	// The open row group read from its pages (group != nil): which columns each path reads, the
	// next row to decode and the rows it has.
	group    *groupRead
	at, rows int64
	rowBytes int64 // decoded bytes per row of the last run (0: none decoded yet)

	// The open row group streamed through pqarrow (older fragments): its reader, its batches,
	// and the fragment row of the next batch.
	fr     *pqarrow.FileReader
	rr     pqarrow.RecordReader
	offset int64
}

// NewSequence starts reading the columns cols names of fragment f from its first row.
func (rd *Reader) NewSequence(ctx context.Context, f Ref, cols Columns) (*Sequence, error) {
	ft, err := rd.Footer(ctx, f)
	if err != nil {
		return nil, err
	}
	return &Sequence{rd: rd, f: f, ft: ft, cols: cols}, nil
}

// Footer is the fragment's footer.
func (s *Sequence) Footer() *Footer { return s.ft }

// Next decodes the next batch: its rows, and the fragment row of its first. A nil batch: the
// fragment has no rows left. The caller releases the batch.
func (s *Sequence) Next(ctx context.Context) (arrow.RecordBatch, int64, error) {
	for {
		switch {
		case s.group != nil:
			return s.decodeRun(ctx)
		case s.rr != nil:
			rec, offset, err := s.decodeBatch()
			if rec != nil || err != nil {
				return rec, offset, err
			}
			continue // the row group ended
		case s.next >= s.ft.md.NumRowGroups():
			return nil, 0, nil
		}
		rg := s.next
		s.next++
		rec, err := s.openRowGroup(ctx, rg)
		if rec != nil || err != nil {
			return rec, s.ft.rowStarts[rg], err
		}
	}
}

// openRowGroup starts reading row group rg: its rows are decoded a run at a time by decodeRun
// (from its pages: fetched per run, or the row group's encoded bytes fetched here at once) or a
// batch at a time by decodeBatch (pqarrow, for fragments without a page index). A row group
// whose columns are all null has nothing to decode: its rows are returned here at once.
func (s *Sequence) openRowGroup(ctx context.Context, rg int) (arrow.RecordBatch, error) {
	g, err := s.rd.newGroupRead(ctx, s.f, s.cols, rg)
	if err != nil {
		return nil, err
	}
	if g.pages == nil {
		return s.streamRowGroup(ctx, rg)
	}
	rows := s.ft.rowStarts[rg+1] - s.ft.rowStarts[rg]
	if rows == 0 {
		return nil, nil // no rows: nothing to decode
	}
	s.group, s.at, s.rows = g, 0, rows
	if len(g.nested) == 0 && objstore.ReadsInto(s.rd.Store) {
		return nil, nil // each run fetches its own pages (decodeRun)
	}
	if g.span, err = s.rd.rowGroupWindow(ctx, s.f, s.ft.md, []int{rg}); err != nil {
		s.closeRowGroup()
		return nil, err
	}
	return nil, nil
}

// runRows is how many rows the next run of the open row group decodes: about SequenceBatchBytes
// at the bytes per row the last run measured (the first: at most firstRunRows), the rest of the
// row group at most.
func (s *Sequence) runRows() int64 {
	left := s.rows - s.at
	if s.rowBytes == 0 {
		// No width measured yet: firstRunRows, fewer when the footer says the rows are wide (it
		// understates only dictionary-encoded columns).
		n := int64(firstRunRows)
		if est, ok := footerBatchRows(s.ft.md.RowGroup(s.group.rg)); ok {
			n = min(n, max(1, est))
		}
		return min(left, n)
	}
	return min(left, max(1, SequenceBatchBytes/s.rowBytes))
}

// decodeRun decodes the open row group's next run of rows from its pages, and closes the row
// group after its last run.
func (s *Sequence) decodeRun(ctx context.Context) (arrow.RecordBatch, int64, error) {
	g := s.group
	runs := []rowRun{{s.at, s.runRows()}}
	rec, err := g.readRuns(ctx, s.cols.Names, runs)
	if err != nil {
		return nil, 0, fmt.Errorf("fragment: read %s: %w", s.f.Path, err)
	}
	n := runs[0].n
	s.rowBytes = max(1, decodedBytes(rec)/n)
	offset := s.ft.rowStarts[g.rg] + s.at
	if s.at += n; s.at >= s.rows {
		s.closeRowGroup()
	}
	return rec, offset, nil
}

// decodedBytes is the size of the buffers of rec's columns that hold values (columns of nulls
// only may share their buffers with other records).
func decodedBytes(rec arrow.RecordBatch) int64 {
	var size int64
	for _, col := range rec.Columns() {
		if col.NullN() < col.Len() {
			size += int64(col.Data().SizeInBytes())
		}
	}
	return size
}

// streamRowGroup starts reading row group rg of a fragment without a page index: its encoded
// bytes are fetched at once, its columns decoded a batch at a time by decodeBatch.
func (s *Sequence) streamRowGroup(ctx context.Context, rg int) (arrow.RecordBatch, error) {
	fr, err := s.rd.openFragment(ctx, s.f, accessStream, nil, rg)
	if err != nil {
		return nil, err
	}
	read := storedColumns(fr, s.cols.Names, []int{rg})
	leaves, _ := leafColumns(fr, read)
	if len(leaves) == 0 { // every column null here: no decoder to run
		fr.ParquetReader().Close()
		return s.rd.layoutColumns(nil, s.ft.md.RowGroup(rg).NumRows(), s.cols.Schema, s.cols.Names)
	}
	fr.Props.Parallel = true // columns decode concurrently
	fr.Props.BatchSize = streamBatchRows(s.ft.md.RowGroup(rg))
	rr, err := fr.GetRecordReader(ctx, leaves, []int{rg})
	if err != nil {
		fr.ParquetReader().Close()
		return nil, fmt.Errorf("fragment: read %s: %w", s.f.Path, err)
	}
	s.fr, s.rr, s.offset = fr, rr, s.ft.rowStarts[rg]
	return nil, nil
}

// decodeBatch decodes the open row group's next batch laid out as the read's columns, or closes
// the row group when it has none left (a nil batch).
func (s *Sequence) decodeBatch() (arrow.RecordBatch, int64, error) {
	if !s.rr.Next() {
		err := s.rr.Err()
		s.closeRowGroup()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("fragment: read %s: %w", s.f.Path, err)
		}
		return nil, 0, nil
	}
	batch := s.rr.RecordBatch()
	offset := s.offset
	s.offset += batch.NumRows()
	tbl := array.NewTableFromRecords(batch.Schema(), []arrow.RecordBatch{batch})
	defer tbl.Release()
	rec, err := s.rd.layoutColumns(tbl, batch.NumRows(), s.cols.Schema, s.cols.Names)
	return rec, offset, err
}

func (s *Sequence) closeRowGroup() {
	s.group = nil
	if s.rr != nil {
		s.rr.Release()
		s.fr.ParquetReader().Close()
		s.fr, s.rr = nil, nil
	}
}

// Release frees what the sequence holds; it may be called at any point.
func (s *Sequence) Release() { s.closeRowGroup() }
