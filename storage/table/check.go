// CheckTable: the invariant checker the tests run after every step. It verifies that every file
// a version references exists with the recorded size, that row and deletion counts agree, that
// every live key appears exactly once and carries the newest _seq of all its stored rows, and
// that the key index resolves every key of the fragments it covers to exactly its live row.
package table

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/strata-store/strata/storage/fragment"
)

// Check verifies version m's invariants and returns the first violation found.
func (t *Table) Check(ctx context.Context, m *Manifest) error {
	for _, p := range manifestFiles(m) {
		if _, err := t.store.Stat(ctx, p); err != nil {
			return fmt.Errorf("check v%d: referenced file %s: %w", m.Version, p, err)
		}
	}
	if !slices.IsSortedFunc(m.Fragments, func(a, b Fragment) int { return compareUint(a.ID, b.ID) }) {
		return fmt.Errorf("check v%d: fragments are not sorted by id", m.Version)
	}
	type seen struct {
		live     bool
		liveSeq  uint64
		maxSeq   uint64
		fragment uint64
		row      int64
		tomb     bool
	}
	keys := map[string]*seen{}
	var maxSeq uint64
	for _, f := range m.Fragments {
		info, err := t.store.Stat(ctx, f.Path)
		if err != nil {
			return err
		}
		if info.Size != f.Bytes {
			return fmt.Errorf("check v%d: fragment %s is %d bytes, manifest says %d", m.Version, f.Path, info.Size, f.Bytes)
		}
		del, err := t.deletions(ctx, f)
		if err != nil {
			return err
		}
		if int64(del.GetCardinality()) != f.DeletedRows {
			return fmt.Errorf("check v%d: fragment %d deletion vector has %d rows, manifest says %d", m.Version, f.ID, del.GetCardinality(), f.DeletedRows)
		}
		rec, err := t.reader.ReadRowGroups(ctx, f.Ref(), fragment.Columns{Schema: m.Schema(), Names: []string{m.KeyColumn, SeqColumn, TombstoneColumn}}, nil)
		if err != nil {
			return err
		}
		if rec.NumRows() != f.Rows {
			rec.Release()
			return fmt.Errorf("check v%d: fragment %d has %d rows, manifest says %d", m.Version, f.ID, rec.NumRows(), f.Rows)
		}
		ks, seqs, tombs := rec.Column(0).(*array.String), rec.Column(1).(*array.Uint64), rec.Column(2).(*array.Boolean)
		for i := 0; i < ks.Len(); i++ {
			k, seq := ks.Value(i), seqs.Value(i)
			maxSeq = max(maxSeq, seq)
			s := keys[k]
			if s == nil {
				s = &seen{}
				keys[k] = s
			}
			s.maxSeq = max(s.maxSeq, seq)
			if del.Contains(uint32(i)) {
				continue
			}
			if s.live {
				rec.Release()
				return fmt.Errorf("check v%d: key %q is live twice (fragments %d and %d)", m.Version, k, s.fragment, f.ID)
			}
			s.live, s.liveSeq, s.fragment, s.row, s.tomb = true, seq, f.ID, int64(i), tombs.Value(i)
		}
		rec.Release()
	}
	if maxSeq > m.MaxSeq {
		return fmt.Errorf("check v%d: a row has _seq %d above the manifest's max_seq %d", m.Version, maxSeq, m.MaxSeq)
	}
	var covered []string
	for k, s := range keys {
		if s.live && s.liveSeq < s.maxSeq {
			return fmt.Errorf("check v%d: key %q is live with _seq %d but a stored row has newer _seq %d", m.Version, k, s.liveSeq, s.maxSeq)
		}
		if s.live && m.Covers(s.fragment) {
			covered = append(covered, k)
		}
	}
	if m.KeyIndex == nil {
		return nil
	}
	for _, id := range m.KeyIndex.Covered {
		if _, ok := m.Fragment(id); !ok {
			return fmt.Errorf("check v%d: index covers fragment %d, which does not exist", m.Version, id)
		}
	}
	slices.Sort(covered)
	hits, err := t.indexLookup(ctx, m, covered)
	if err != nil {
		return err
	}
	for _, k := range covered {
		s, e := keys[k], hits[k]
		if e.Key != k || e.Fragment != s.fragment || e.Row != s.row || e.Seq != s.liveSeq || e.Tombstone != s.tomb {
			return fmt.Errorf("check v%d: index entry for %q is %+v, data says fragment %d row %d seq %d", m.Version, k, e, s.fragment, s.row, s.liveSeq)
		}
	}
	return nil
}
