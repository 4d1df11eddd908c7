// Progress accounting for long operations: a context may carry a Progress, and a Store wrapped
// by WithProgress adds to it every call that finishes and every byte it moves. A watchdog reads
// the counts to tell an operation that is working from one stuck in a call that never returns
// (a hung disk, a dead connection): the counts stop moving.
package objstore

import (
	"context"
	"sync/atomic"
)

// Progress counts the object-store calls finished and bytes moved on behalf of one operation.
type Progress struct {
	calls atomic.Int64
	bytes atomic.Int64
}

// Counts returns the calls finished and bytes moved so far.
func (p *Progress) Counts() (calls, bytes int64) { return p.calls.Load(), p.bytes.Load() }

func (p *Progress) add(n int) {
	if p != nil {
		p.calls.Add(1)
		p.bytes.Add(int64(n))
	}
}

type progressKey struct{}

// ContextWithProgress returns ctx carrying p: calls made with it through a WithProgress store
// are counted in p.
func ContextWithProgress(ctx context.Context, p *Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

func progressOf(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}

// ProgressCounting wraps a Store, counting each call in the Progress its context carries (none:
// nothing is counted). It answers WritesInPlace for the store it wraps.
type ProgressCounting struct{ inner Store }

// WithProgress wraps s (see ProgressCounting).
func WithProgress(s Store) *ProgressCounting { return &ProgressCounting{inner: s} }

func (c *ProgressCounting) Get(ctx context.Context, key string) ([]byte, error) {
	data, err := c.inner.Get(ctx, key)
	progressOf(ctx).add(len(data))
	return data, err
}

func (c *ProgressCounting) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	data, err := c.inner.GetRange(ctx, key, offset, length)
	progressOf(ctx).add(len(data))
	return data, err
}

func (c *ProgressCounting) Put(ctx context.Context, key string, data []byte) error {
	err := c.inner.Put(ctx, key, data)
	progressOf(ctx).add(len(data))
	return err
}

func (c *ProgressCounting) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	err := c.inner.PutIfAbsent(ctx, key, data)
	progressOf(ctx).add(len(data))
	return err
}

func (c *ProgressCounting) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	page, err := c.inner.List(ctx, prefix, startAfter, limit)
	progressOf(ctx).add(0)
	return page, err
}

func (c *ProgressCounting) ListAllKeys(ctx context.Context, prefix string) ([]string, error) {
	keys, err := ListAllKeys(ctx, c.inner, prefix)
	progressOf(ctx).add(0)
	return keys, err
}

func (c *ProgressCounting) Delete(ctx context.Context, key string) error {
	err := c.inner.Delete(ctx, key)
	progressOf(ctx).add(0)
	return err
}

func (c *ProgressCounting) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	info, err := c.inner.Stat(ctx, key)
	progressOf(ctx).add(0)
	return info, err
}

// ReadsInto answers for the wrapped store.
func (c *ProgressCounting) ReadsInto() bool { return ReadsInto(c.inner) }

func (c *ProgressCounting) ReadRangeInto(ctx context.Context, key string, offset int64, buf []byte) (int, error) {
	n, err := ReadRangeInto(ctx, c.inner, key, offset, buf)
	progressOf(ctx).add(n)
	return n, err
}

// WritesInPlace answers for the wrapped store.
func (c *ProgressCounting) WritesInPlace() bool { return WritesInPlace(c.inner) }

// OpenWriter opens the wrapped store's writer; its writes and syncs are counted too.
func (c *ProgressCounting) OpenWriter(ctx context.Context, key string, opts WriterOptions) (ObjectWriter, error) {
	w, err := OpenWriter(ctx, c.inner, key, opts)
	if err != nil {
		return nil, err
	}
	return progressWriter{w}, nil
}

type progressWriter struct{ ObjectWriter }

func (w progressWriter) WriteAt(ctx context.Context, p []byte, off int64) error {
	err := w.ObjectWriter.WriteAt(ctx, p, off)
	progressOf(ctx).add(len(p))
	return err
}

func (w progressWriter) Sync(ctx context.Context) error {
	err := w.ObjectWriter.Sync(ctx)
	progressOf(ctx).add(0)
	return err
}
