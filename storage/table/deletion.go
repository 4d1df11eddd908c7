// Deletion vectors: per fragment, an immutable roaring bitmap of deleted row offsets at
// deletions/<fragment id>-<random>.rbm. Marking more rows deleted writes a new file holding the
// union; the manifest points at the current one.
package table

import (
	"bytes"
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
)

// deletions returns the deletion bitmap of f (empty when it has none). The result may be shared
// through the cache: callers must not modify it (Clone first).
func (t *Table) deletions(ctx context.Context, f Fragment) (*roaring.Bitmap, error) {
	if f.DeletionFile == "" {
		return roaring.New(), nil
	}
	if bm, ok := t.deletionCache.Get(f.DeletionFile); ok {
		return bm, nil
	}
	data, err := t.store.Get(ctx, f.DeletionFile)
	if err != nil {
		return nil, fmt.Errorf("table: read deletion vector %s: %w", f.DeletionFile, err)
	}
	bm := roaring.New()
	if _, err := bm.ReadFrom(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("table: corrupt deletion vector %s: %w", f.DeletionFile, err)
	}
	t.deletionCache.Add(f.DeletionFile, bm)
	return bm, nil
}

// writeDeletions stores bm as the new deletion vector of fragment id and returns its path.
func (t *Table) writeDeletions(ctx context.Context, fragmentID uint64, bm *roaring.Bitmap) (string, error) {
	bm.RunOptimize()
	var buf bytes.Buffer
	if _, err := bm.WriteTo(&buf); err != nil {
		return "", err
	}
	path := fmt.Sprintf("%s%016x-%s.rbm", deletesDir, fragmentID, randomName())
	if err := t.store.PutIfAbsent(ctx, path, buf.Bytes()); err != nil {
		return "", fmt.Errorf("table: write deletion vector: %w", err)
	}
	t.deletionCache.Add(path, bm)
	return path, nil
}
