// The memtable: rows appended to a shard since its last seal, newest row per key indexed.
// The active memtable is guarded by its Writer's mutex; once frozen (swapped out for sealing) a
// memtable never changes again, so sealing and reads of frozen memtables need no lock.
package memwal

import (
	"context"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/table"
)

type rowRef struct {
	batch int
	row   int
	seq   uint64
	tomb  bool
}

type memtable struct {
	batches []arrow.RecordBatch
	index   map[string]rowRef
	lastPos uint64 // the highest WAL position whose rows are in this memtable
	rows    int64
	bytes   int64
	firstAt time.Time
}

func newMemtable() *memtable { return &memtable{index: map[string]rowRef{}} }

func (m *memtable) empty() bool { return m.rows == 0 && m.lastPos == 0 }

// insert adds rec's rows (WAL position pos); rec is retained. Rows carry the table schema.
func (m *memtable) insert(rec arrow.RecordBatch, pos uint64, keyColumn string) {
	if m.firstAt.IsZero() && rec.NumRows() > 0 {
		m.firstAt = time.Now()
	}
	m.lastPos = max(m.lastPos, pos)
	if rec.NumRows() == 0 {
		return
	}
	rec.Retain()
	b := len(m.batches)
	m.batches = append(m.batches, rec)
	s := rec.Schema()
	keys := rec.Column(s.FieldIndices(keyColumn)[0]).(*array.String)
	seqs := rec.Column(s.FieldIndices(table.SeqColumn)[0]).(*array.Uint64)
	tombs := rec.Column(s.FieldIndices(table.TombstoneColumn)[0]).(*array.Boolean)
	for i := 0; i < keys.Len(); i++ {
		k := keys.Value(i)
		if cur, ok := m.index[k]; ok && cur.seq > seqs.Value(i) {
			continue
		}
		m.index[k] = rowRef{batch: b, row: i, seq: seqs.Value(i), tomb: tombs.Value(i)}
	}
	m.rows += rec.NumRows()
	for _, c := range rec.Columns() {
		m.bytes += int64(c.Data().SizeInBytes())
	}
}

// row returns key's newest row as a one-row record (retained; the caller releases it).
func (m *memtable) row(key string) (arrow.RecordBatch, rowRef, bool) {
	ref, ok := m.index[key]
	if !ok {
		return nil, rowRef{}, false
	}
	return m.batches[ref.batch].NewSlice(int64(ref.row), int64(ref.row)+1), ref, true
}

func (m *memtable) release() {
	for _, b := range m.batches {
		b.Release()
	}
	m.batches, m.index = nil, nil
}

// sortedRefs returns the memtable's newest row per key, sorted by key.
func (m *memtable) sortedRefs() ([]string, []rowRef) {
	keys := make([]string, 0, len(m.index))
	for k := range m.index {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	refs := make([]rowRef, len(keys))
	for i, k := range keys {
		refs[i] = m.index[k]
	}
	return keys, refs
}

// build returns the memtable's newest row per key, sorted by key, as one record plus its key file.
func (m *memtable) build(ctx context.Context, schema *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, *genKeys, error) {
	keys, refs := m.sortedRefs()
	all, err := arrowutil.Concat(schema, m.batches, mem)
	if err != nil {
		return nil, nil, err
	}
	defer all.Release()
	offsets := make([]int64, len(m.batches))
	var off int64
	for i, b := range m.batches {
		offsets[i] = off
		off += b.NumRows()
	}
	idx := make([]int64, len(refs))
	gk := &genKeys{keys: keys, seqs: make([]uint64, len(refs)), tombs: make([]bool, len(refs))}
	for i, r := range refs {
		idx[i] = offsets[r.batch] + int64(r.row)
		gk.seqs[i], gk.tombs[i] = r.seq, r.tomb
	}
	rec, err := arrowutil.Take(ctx, mem, all, idx)
	return rec, gk, err
}
