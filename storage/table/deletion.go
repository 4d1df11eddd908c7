// Deletion vectors: per fragment, a roaring bitmap of deleted row offsets. Every commit that
// deletes rows writes ONE immutable object, deletions/<random>.rbm, holding the new bitmaps of all
// the fragments it touched back to back; each fragment's manifest entry points at its slice
// (path, offset, length). An upsert therefore writes a constant number of objects however many
// fragments its rows were spread over. A fragment's new bitmap is the union of its old one and
// the newly deleted rows.
package table

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/strata-store/strata/storage/cache"
)

// deletionKey identifies one bitmap in the cache.
func deletionKey(f Fragment) string { return fmt.Sprintf("%s#%d", f.DeletionFile, f.DeletionOffset) }

// deletions returns the deletion bitmap of f (empty when it has none). The result may be shared
// through the cache: callers must not modify it (Clone first).
func (t *Table) deletions(ctx context.Context, f Fragment) (*roaring.Bitmap, error) {
	if f.DeletionFile == "" {
		return roaring.New(), nil
	}
	if bm, ok := cache.Get[*roaring.Bitmap](t.cache, "deletion", deletionKey(f)); ok {
		return bm, nil
	}
	data, err := t.store.GetRange(ctx, f.DeletionFile, f.DeletionOffset, f.DeletionLength)
	if err != nil {
		return nil, fmt.Errorf("table: read deletion vector %s: %w", f.DeletionFile, err)
	}
	if int64(len(data)) != f.DeletionLength {
		return nil, fmt.Errorf("table: deletion vector %s@%d is truncated", f.DeletionFile, f.DeletionOffset)
	}
	bm := roaring.New()
	if _, err := bm.ReadFrom(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("table: corrupt deletion vector %s@%d: %w", f.DeletionFile, f.DeletionOffset, err)
	}
	cache.Add(t.cache, "deletion", deletionKey(f), bm, int64(bm.GetSizeInBytes()))
	return bm, nil
}

// writeDeletionSet stores the bitmaps (fragment id -> bitmap) in one object and points each
// fragment of m at its slice, updating DeletedRows. It returns the object's path.
func (t *Table) writeDeletionSet(ctx context.Context, m *Manifest, bitmaps map[uint64]*roaring.Bitmap) (string, error) {
	path := deletesDir + randomName() + ".rbm"
	var buf bytes.Buffer
	type slice struct{ off, n int64 }
	slices_ := map[uint64]slice{}
	for _, id := range slices.Sorted(maps.Keys(bitmaps)) {
		bm := bitmaps[id]
		bm.RunOptimize()
		off := int64(buf.Len())
		if _, err := bm.WriteTo(&buf); err != nil {
			return "", err
		}
		slices_[id] = slice{off, int64(buf.Len()) - off}
	}
	if err := t.store.PutIfAbsent(ctx, path, buf.Bytes()); err != nil {
		return "", fmt.Errorf("table: write deletion vectors: %w", err)
	}
	for i := range m.Fragments {
		f := &m.Fragments[i]
		s, ok := slices_[f.ID]
		if !ok {
			continue
		}
		f.DeletionFile, f.DeletionOffset, f.DeletionLength = path, s.off, s.n
		f.DeletedRows = int64(bitmaps[f.ID].GetCardinality())
		cache.Add(t.cache, "deletion", deletionKey(*f), bitmaps[f.ID], int64(bitmaps[f.ID].GetSizeInBytes()))
	}
	return path, nil
}
