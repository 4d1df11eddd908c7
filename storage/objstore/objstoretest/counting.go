// A objstore.Store wrapper that counts calls and bytes moved: how benchmarks and tests measure I/O.
package objstoretest

import (
	"context"
	"sync/atomic"

	"github.com/strata-store/strata/storage/objstore"
)

// Counting wraps a objstore.Store and counts reads and writes.
type Counting struct {
	Inner                    objstore.Store
	reads, readBytes         atomic.Int64
	writes, writeBytes, list atomic.Int64
}

// NewCounting wraps inner.
func NewCounting(inner objstore.Store) *Counting { return &Counting{Inner: inner} }

// IOStats is a snapshot of the counters.
type IOStats struct {
	Reads, ReadBytes, Writes, WriteBytes, Lists int64
}

// Stats returns the counters so far.
func (c *Counting) Stats() IOStats {
	return IOStats{Reads: c.reads.Load(), ReadBytes: c.readBytes.Load(), Writes: c.writes.Load(),
		WriteBytes: c.writeBytes.Load(), Lists: c.list.Load()}
}

// Sub returns s - o, counter by counter.
func (s IOStats) Sub(o IOStats) IOStats {
	return IOStats{s.Reads - o.Reads, s.ReadBytes - o.ReadBytes, s.Writes - o.Writes, s.WriteBytes - o.WriteBytes, s.Lists - o.Lists}
}

func (c *Counting) read(b []byte, err error) ([]byte, error) {
	c.reads.Add(1)
	c.readBytes.Add(int64(len(b)))
	return b, err
}

func (c *Counting) Get(ctx context.Context, key string) ([]byte, error) {
	return c.read(c.Inner.Get(ctx, key))
}

func (c *Counting) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	return c.read(c.Inner.GetRange(ctx, key, offset, length))
}

func (c *Counting) Put(ctx context.Context, key string, data []byte) error {
	c.writes.Add(1)
	c.writeBytes.Add(int64(len(data)))
	return c.Inner.Put(ctx, key, data)
}

func (c *Counting) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	c.writes.Add(1)
	c.writeBytes.Add(int64(len(data)))
	return c.Inner.PutIfAbsent(ctx, key, data)
}

func (c *Counting) List(ctx context.Context, prefix, startAfter string, limit int) (objstore.ListPage, error) {
	c.list.Add(1)
	return c.Inner.List(ctx, prefix, startAfter, limit)
}

func (c *Counting) Delete(ctx context.Context, key string) error {
	c.writes.Add(1)
	return c.Inner.Delete(ctx, key)
}

func (c *Counting) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	c.reads.Add(1)
	return c.Inner.Stat(ctx, key)
}

func (c *Counting) WritesInPlace() bool { return objstore.WritesInPlace(c.Inner) }

func (c *Counting) OpenWriter(ctx context.Context, key string, opts objstore.WriterOptions) (objstore.ObjectWriter, error) {
	w, err := objstore.OpenWriter(ctx, c.Inner, key, opts)
	if err != nil {
		return nil, err
	}
	return &countingWriter{c: c, w: w}, nil
}

type countingWriter struct {
	c *Counting
	w objstore.ObjectWriter
}

func (cw *countingWriter) WriteAt(ctx context.Context, p []byte, off int64) error {
	cw.c.writes.Add(1)
	cw.c.writeBytes.Add(int64(len(p)))
	return cw.w.WriteAt(ctx, p, off)
}

func (cw *countingWriter) Sync(ctx context.Context) error { return cw.w.Sync(ctx) }

func (cw *countingWriter) Close() error { return cw.w.Close() }
