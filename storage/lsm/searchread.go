// A search's read: what one search sees (this process's memtable, a snapshot, the pending set
// over both, a row reader that keeps the WAL entries it reads cached), the rows of its answer,
// and the point reads of the records a search answers (GetSearched). Searches come back to the
// same pending rows and base pages query after query, so everything they read from immutable
// objects stays in the process's object cache.
package lsm

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/shard"
)

// searchRead is what one search reads: this process's memtable (a view, held until release), a
// snapshot, the pending set over both, and a row reader that keeps the WAL entries it reads
// cached.
type searchRead struct {
	mem     *shard.MemView
	snap    *Snapshot
	pending *pendingSet
	rows    *shard.RowReader
}

// openSearchRead starts a search's read (pending keys below before; every key when empty).
func (s *Store) openSearchRead(ctx context.Context, before string) (*searchRead, error) {
	r := &searchRead{mem: &shard.MemView{}}
	if w := s.residentWriter(); w != nil {
		r.mem = w.View("")
	}
	var err error
	if r.snap, err = s.Snapshot(ctx); err == nil {
		r.pending, err = s.pendingFor(ctx, r.snap, r.mem, before)
	}
	if err != nil {
		r.mem.Release()
		return nil, err
	}
	r.rows = s.shards.NewCachingRowReader()
	return r, nil
}

func (r *searchRead) release() {
	r.rows.Release()
	r.mem.Release()
}

// answerRows reads the rows of a search's answer, versions (the named columns), in order, keeping
// the base pages it reads cached (table.ReadRowsForSearch).
func (s *Store) answerRows(ctx context.Context, snap *Snapshot, versions []version, names []string, genRows *shard.RowReader) (arrow.RecordBatch, error) {
	if len(versions) == 0 {
		return emptyRecord(s, names), nil
	}
	rows := newPageBuilder(s, names, names)
	rows.forSearch = true
	defer rows.release()
	// A few rows at a time: the answer's rows lie anywhere in their fragments, and a read of
	// more than fragment.PointReadRows rows of one row group decodes a run spanning them all.
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for start := 0; start < len(versions); start += nearestPointRows {
		part, err := rows.gather(ctx, snap, versions[start:min(start+nearestPointRows, len(versions))], genRows)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	return arrowutil.Concat(rows.schema, parts, s.mem)
}

// GetSearched reads the newest live version of each key (the named columns) for a search's
// answer, in one snapshot: found[i] is key i's row in the record, or -1 when the store holds no
// live version of it. Pending rows are read through the caching row reader and the pending set
// the searches share, since a search's next answer is likely to come from the same WAL entries.
func (s *Store) GetSearched(ctx context.Context, keys []string, columns []string) (rec arrow.RecordBatch, found []int, err error) {
	names, err := s.columns(columns)
	if err != nil {
		return nil, nil, err
	}
	type answer struct {
		rec   arrow.RecordBatch
		found []int
	}
	a, err := readFresh(ctx, s, func() (answer, error) {
		rec, found, err := s.getSearchedOnce(ctx, keys, names)
		return answer{rec, found}, err
	})
	return a.rec, a.found, err
}

func (s *Store) getSearchedOnce(ctx context.Context, keys []string, names []string) (arrow.RecordBatch, []int, error) {
	r, err := s.openSearchRead(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	defer r.release()
	snap, pending := r.snap, r.pending
	base, err := s.tbl.Lookup(ctx, snap.Table, keys)
	if err != nil {
		return nil, nil, err
	}
	found := make([]int, len(keys))
	var versions []version
	for i, k := range keys {
		best, _ := pending.get(k)
		if ref, ok := base[k]; ok {
			if v := tableVersion(ref); v.supersedes(best) {
				best = v
			}
		}
		if best.src == sourceNone || best.tomb {
			found[i] = -1
			continue
		}
		found[i] = len(versions)
		versions = append(versions, best)
	}
	rec, err := s.answerRows(ctx, snap, versions, names, r.rows)
	if err != nil {
		return nil, nil, err
	}
	return rec, found, nil
}
