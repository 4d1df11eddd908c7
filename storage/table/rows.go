// Row-level helpers shared by upsert, compaction, index builds and reads: selecting rows of a
// record, reading the key/_seq/_tombstone columns of a fragment (never its payload columns), and
// live-row masks from deletion vectors.
package table

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/strata-store/strata/storage/fragment"
)

// keyRow is one row's identity as the key columns describe it.
type keyRow struct {
	key       string
	row       int64
	seq       uint64
	tombstone bool
}

// scanKeys calls fn for every live row of fragment f (rows in its deletion vector are skipped),
// reading only the key, _seq and _tombstone columns.
func (t *Table) scanKeys(ctx context.Context, m *Manifest, f Fragment, fn func(keyRow)) error {
	rec, err := t.reader.ReadRowGroups(ctx, f.Ref(), fragment.Columns{Schema: m.Schema(), Names: []string{m.KeyColumn, SeqColumn, TombstoneColumn}}, nil)
	if err != nil {
		return err
	}
	defer rec.Release()
	del, err := t.deletions(ctx, f)
	if err != nil {
		return err
	}
	keys := rec.Column(0).(*array.String)
	seqs := rec.Column(1).(*array.Uint64)
	tombs := rec.Column(2).(*array.Boolean)
	for i := 0; i < keys.Len(); i++ {
		if del.Contains(uint32(i)) {
			continue
		}
		fn(keyRow{key: keys.Value(i), row: int64(i), seq: seqs.Value(i), tombstone: tombs.Value(i)})
	}
	return nil
}
