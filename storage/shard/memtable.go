// The memtable: rows appended to a shard since its last seal, newest row per key indexed. Each
// batch is rows of one WAL entry — the whole entry, or one append of the group commit that wrote
// it, starting at a known row of the entry — so a seal can describe the memtable by reference to
// its entries (position and row) instead of writing the rows again.
// The active memtable is guarded by its Writer's mutex; once frozen (swapped out for sealing) a
// memtable never changes again, so sealing and reads of frozen memtables need no lock.
package shard

import (
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/table"
)

type rowRef struct {
	batch int
	row   int
	seq   uint64
	tomb  bool
}

type memtable struct {
	batches   []arrow.RecordBatch
	positions []uint64 // positions[i] is the WAL position of the entry holding batches[i]
	locs      []walLoc // locs[i] is where that entry is (a segment frame or the entry object)
	rowBase   []int    // rowBase[i] is the entry row at which batches[i] starts
	index     map[string]rowRef
	firstPos  uint64 // the lowest WAL position inserted (rows or not); 0 when none
	lastPos   uint64 // the highest WAL position inserted (rows or not)
	rows      int64
	bytes     int64 // in-memory Arrow bytes (the seal trigger)
	walBytes  int64 // encoded size of the WAL entries holding the rows
	firstAt   time.Time
}

func newMemtable() *memtable { return &memtable{index: map[string]rowRef{}} }

func (m *memtable) empty() bool { return m.rows == 0 && m.lastPos == 0 }

// insert adds recs, the rows of the WAL entry at pos (stored at loc, entryBytes long, encoded)
// in entry order; recs are retained. Positions arrive in increasing order. Rows carry the table
// schema.
func (m *memtable) insert(recs []arrow.RecordBatch, pos uint64, loc walLoc, entryBytes int64, keyColumn string) {
	if m.firstPos == 0 {
		m.firstPos = pos
	}
	m.lastPos = max(m.lastPos, pos)
	base, counted := 0, false
	for _, rec := range recs {
		if rec.NumRows() == 0 {
			continue
		}
		if m.firstAt.IsZero() {
			m.firstAt = time.Now()
		}
		if !counted {
			m.walBytes += entryBytes
			counted = true
		}
		rec.Retain()
		b := len(m.batches)
		m.batches = append(m.batches, rec)
		m.positions = append(m.positions, pos)
		m.locs = append(m.locs, loc)
		m.rowBase = append(m.rowBase, base)
		base += int(rec.NumRows())
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
	m.batches, m.positions, m.locs, m.rowBase, m.index = nil, nil, nil, nil, nil
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

// cloneKeys replaces keys with copies that share one allocation of their own.
func cloneKeys(keys []string) {
	var n int
	for _, k := range keys {
		n += len(k)
	}
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
	}
	all, off := b.String(), 0
	for i, k := range keys {
		keys[i] = all[off : off+len(k)]
		off += len(k)
	}
}

// keyFile describes the memtable as an entry-backed generation: its newest row per key, sorted
// by key, located by (entry, row) in the WAL entries that hold it (and where each entry is). Its
// keys are copies: the memtable's keys point into the appended batches' buffers (request bodies),
// and the key file outlives them in the object cache, where it would keep every body it has a
// key of in memory.
func (m *memtable) keyFile() *KeyFile {
	keys, refs := m.sortedRefs()
	cloneKeys(keys)
	gk := &KeyFile{Keys: keys, Seqs: make([]uint64, len(refs)), Tombs: make([]bool, len(refs)),
		entry: make([]uint32, len(refs)), row: make([]uint32, len(refs))}
	entryOf := make([]uint32, len(m.batches)) // batch -> index into gk.entries
	for b, pos := range m.positions {
		if n := len(gk.entries); n == 0 || gk.entries[n-1] != pos {
			gk.entries = append(gk.entries, pos)
			gk.locs = append(gk.locs, m.locs[b])
		}
		entryOf[b] = uint32(len(gk.entries) - 1)
	}
	for i, r := range refs {
		gk.Seqs[i], gk.Tombs[i] = r.seq, r.tomb
		gk.entry[i], gk.row[i] = entryOf[r.batch], uint32(m.rowBase[r.batch]+r.row)
	}
	return gk
}
