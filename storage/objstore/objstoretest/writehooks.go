// A objstore.Store wrapper that runs test code around writes: whole objects put and in-place
// writes of the writers it opens (how tests record or hold back what reaches a store).
package objstoretest

import (
	"context"

	"github.com/strata-store/strata/storage/objstore"
)

// WriteHooks wraps a store: BeforePut runs before every PutIfAbsent, BeforeWriteAt before every
// WriteAt of a writer opened through it (nil: nothing runs). Each returns what to run after that
// write (nil: nothing). The wrapper writes in place exactly when the store it wraps does.
type WriteHooks struct {
	objstore.Store
	BeforePut     func(key string, data []byte) (after func())
	BeforeWriteAt func(key string, p []byte) (after func())
}

func (h *WriteHooks) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if h.BeforePut != nil {
		if after := h.BeforePut(key, data); after != nil {
			defer after()
		}
	}
	return h.Store.PutIfAbsent(ctx, key, data)
}

// The test stores and wrappers that may write in place (the compiler checks their OpenWriter).
var _ = []objstore.InPlaceWriter{(*Memory)(nil), (*WriteHooks)(nil), (*ReadSizes)(nil), (*Counting)(nil), (*Faulty)(nil)}

func (h *WriteHooks) WritesInPlace() bool { return objstore.WritesInPlace(h.Store) }

func (h *WriteHooks) OpenWriter(ctx context.Context, key string, opts objstore.WriterOptions) (objstore.ObjectWriter, error) {
	w, err := objstore.OpenWriter(ctx, h.Store, key, opts)
	if err != nil {
		return nil, err
	}
	return &hookedWriter{ObjectWriter: w, h: h, key: key}, nil
}

type hookedWriter struct {
	objstore.ObjectWriter
	h   *WriteHooks
	key string
}

func (w *hookedWriter) WriteAt(ctx context.Context, p []byte, off int64) error {
	if w.h.BeforeWriteAt != nil {
		if after := w.h.BeforeWriteAt(w.key, p); after != nil {
			defer after()
		}
	}
	return w.ObjectWriter.WriteAt(ctx, p, off)
}
