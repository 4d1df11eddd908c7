// Local in-place writes: pwrite into the object's file (the whole blocks of large writes directly
// when the writer asks, see directwrite.go), fdatasync to make them durable (the name was made
// durable when the object was created).
package objstore

import (
	"context"
	"errors"
	"fmt"
	"os"
)

func (l *Local) WritesInPlace() bool { return true }

func (l *Local) OpenWriter(ctx context.Context, key string, opts WriterOptions) (ObjectWriter, error) {
	p, err := l.path(ctx, key)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("objstore: open writer %s: %w", key, mapErr(key, err))
	}
	w := &localWriter{f: f}
	if opts.Direct {
		w.direct = openDirect(p)
	}
	return w, nil
}

// localWriter is safe for concurrent use: pwrite and fdatasync need no shared offset.
type localWriter struct {
	f      *os.File
	direct *directWriter // the same file opened for direct writes; nil when not asked for or refused
}

func (w *localWriter) WriteAt(ctx context.Context, p []byte, off int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.direct.writeAt(p, off, w.writeBuffered)
}

// writeBuffered writes p at off through the page cache.
func (w *localWriter) writeBuffered(p []byte, off int64) error {
	_, err := w.f.WriteAt(p, off)
	return err
}

func (w *localWriter) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return datasync(w.f)
}

func (w *localWriter) Close() error {
	return errors.Join(w.direct.close(), w.f.Close())
}
