//go:build duckdb_arrow

// batchStream: batches produced on a goroutine (a store's snapshot scan) as an Arrow record
// reader, the form DuckDB reads.
package duckrun

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var memoryPool = memory.DefaultAllocator

// batchStream runs produce on a goroutine of its own and hands its batches, in order, to the
// reader (DuckDB, on threads of its own) through a channel of two: the producer runs at most two
// batches ahead of the reader. Ownership: the producer owns a batch until it is sent; the reader
// owns the current batch until the next Next (or close). close stops the producer and waits for
// its goroutine; rows and the producer's error are read only after done is closed.
type batchStream struct {
	refs    atomic.Int64
	schema  *arrow.Schema
	batches chan arrow.RecordBatch
	cur     arrow.RecordBatch
	cancel  context.CancelFunc
	done    chan struct{}

	rows    int64
	prodErr error
}

// newBatchStream starts produce, which sends its batches (retained by the stream) through emit.
func newBatchStream(ctx context.Context, schema *arrow.Schema, produce func(ctx context.Context, emit func(arrow.RecordBatch) error) error) *batchStream {
	ctx, cancel := context.WithCancel(ctx)
	st := &batchStream{schema: schema, batches: make(chan arrow.RecordBatch, 2), cancel: cancel, done: make(chan struct{})}
	st.refs.Store(1)
	go func() {
		defer close(st.done)
		defer close(st.batches)
		st.prodErr = produce(ctx, func(rec arrow.RecordBatch) error {
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
	}()
	return st
}

func (st *batchStream) Retain()                        { st.refs.Add(1) }
func (st *batchStream) Release()                       { st.refs.Add(-1) } // close frees the batches
func (st *batchStream) Schema() *arrow.Schema          { return st.schema }
func (st *batchStream) Record() arrow.RecordBatch      { return st.cur }
func (st *batchStream) RecordBatch() arrow.RecordBatch { return st.cur }

// Next moves to the next batch; false at the end or when the producer failed (Err).
func (st *batchStream) Next() bool {
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

// Err is the producer's error, once Next has returned false.
func (st *batchStream) Err() error {
	select {
	case <-st.done:
		return st.prodErr
	default:
		return nil
	}
}

// err is the producer's error after it ended (nil when it ended well or was stopped by close).
func (st *batchStream) err() error {
	select {
	case <-st.done:
		if errors.Is(st.prodErr, context.Canceled) {
			return nil
		}
		return st.prodErr
	default:
		return nil
	}
}

// close stops the producer, frees the batches not read and waits for its goroutine.
func (st *batchStream) close() {
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
