//go:build duckdb_arrow

// snapshotStream: a store's snapshot scan as an Arrow record reader, the form DuckDB reads.
package duckrun

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/storage/lsm"
)

var memoryPool = memory.DefaultAllocator

// snapshotStream runs a snapshot scan on a goroutine of its own and hands its batches, in order,
// to the reader (DuckDB, on threads of its own) through a channel of two: the scan runs at most
// two batches ahead of the reader. Ownership: the goroutine owns a batch until it is sent; the
// reader owns the current batch until the next Next (or close). close stops the scan and waits
// for its goroutine; the fields the goroutine writes (start, rows, scanErr) are read only after
// done is closed.
type snapshotStream struct {
	refs    atomic.Int64
	schema  *arrow.Schema
	batches chan arrow.RecordBatch
	cur     arrow.RecordBatch
	cancel  context.CancelFunc
	done    chan struct{}

	start   lsm.SnapshotScanStart
	rows    int64
	scanErr error
}

func newSnapshotStream(ctx context.Context, s *lsm.Store, opts lsm.SnapshotScanOptions) *snapshotStream {
	fields := make([]arrow.Field, len(opts.Columns))
	for i, c := range opts.Columns {
		fields[i] = s.Schema().Field(s.Schema().FieldIndices(c)[0])
	}
	ctx, cancel := context.WithCancel(ctx)
	st := &snapshotStream{schema: arrow.NewSchema(fields, nil), batches: make(chan arrow.RecordBatch, 2), cancel: cancel, done: make(chan struct{})}
	st.refs.Store(1)
	go st.scan(ctx, s, opts)
	return st
}

func (st *snapshotStream) scan(ctx context.Context, s *lsm.Store, opts lsm.SnapshotScanOptions) {
	defer close(st.done)
	defer close(st.batches)
	begun := false
	st.scanErr = s.ScanSnapshot(ctx, opts, func(start lsm.SnapshotScanStart) error {
		if begun {
			return errSnapshotRestarted // DuckDB already read some of the previous attempt
		}
		begun, st.start = true, start
		return nil
	}, func(rec arrow.RecordBatch) error {
		rec.Retain()
		select {
		case st.batches <- rec:
			st.rows += rec.NumRows()
			return nil
		case <-ctx.Done():
			rec.Release()
			return ctx.Err()
		}
	})
}

func (st *snapshotStream) Retain()                        { st.refs.Add(1) }
func (st *snapshotStream) Release()                       { st.refs.Add(-1) } // close frees the batches
func (st *snapshotStream) Schema() *arrow.Schema          { return st.schema }
func (st *snapshotStream) Record() arrow.RecordBatch      { return st.cur }
func (st *snapshotStream) RecordBatch() arrow.RecordBatch { return st.cur }

// Next moves to the next batch; false at the end of the scan or when it failed (Err).
func (st *snapshotStream) Next() bool {
	if st.cur != nil {
		st.cur.Release()
		st.cur = nil
	}
	rec, ok := <-st.batches
	if !ok {
		return false
	}
	st.cur = rec
	return true
}

// Err is the scan's error, once Next has returned false.
func (st *snapshotStream) Err() error {
	select {
	case <-st.done:
		return st.scanErr
	default:
		return nil
	}
}

// err is the scan's error after close (nil when it ended well or was stopped by close).
func (st *snapshotStream) err() error {
	select {
	case <-st.done:
		if st.scanErr == context.Canceled {
			return nil
		}
		return st.scanErr
	default:
		return nil
	}
}

// close stops the scan, frees the batches not read and waits for the scan's goroutine.
func (st *snapshotStream) close() {
	st.cancel()
	for rec := range st.batches {
		rec.Release()
	}
	<-st.done
	if st.cur != nil {
		st.cur.Release()
		st.cur = nil
	}
}
