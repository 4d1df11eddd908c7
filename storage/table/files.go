// The base table as files, for an engine that reads Parquet itself: each fragment's file on the
// local disk (when the table lives on one) and the rows deleted from it.
package table

import (
	"context"

	"github.com/strata-store/strata/storage/objstore"
)

// FragmentFile is the local file of fragment f, or false when the table is not on a local disk.
func (t *Table) FragmentFile(f Fragment) (string, bool) { return objstore.LocalPath(t.store, f.Path) }

// DeletedRows are the positions of f's deleted rows, in ascending order (none when it has no
// deletion vector).
func (t *Table) DeletedRows(ctx context.Context, f Fragment) ([]uint32, error) {
	bm, err := t.deletions(ctx, f)
	if err != nil {
		return nil, err
	}
	return bm.ToArray(), nil
}
