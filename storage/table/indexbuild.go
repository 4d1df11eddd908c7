// Building the key index: from scratch (one run over every fragment) or incrementally (one
// new run over the fragments the index does not cover yet). Only key, _seq and _tombstone
// columns are read.
//
// The expensive part (scanning and writing the run) happens once. If another writer commits
// first, the run is rebased onto the new manifest instead of rebuilt: an index entry stays
// correct for as long as its fragment exists (fragments are immutable; an entry whose row was
// later deleted is simply skipped by lookups), so the rebase only has to drop coverage of
// fragments that disappeared meanwhile.
package table

import (
	"cmp"
	"context"
	"slices"
)

// IndexOptions qualify BuildKeyIndex.
type IndexOptions struct {
	// Rebuild replaces every existing run with one run over the whole table.
	Rebuild bool
}

// BuildKeyIndex makes the key index cover every fragment. It is a no-op when it already does
// (unless Rebuild).
func (t *Table) BuildKeyIndex(ctx context.Context, opts ...IndexOptions) (*Manifest, error) {
	var o IndexOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	start, err := t.Latest(ctx)
	if err != nil {
		return nil, err
	}
	if start.KeyIndex != nil && start.IndexCoversAll() && !o.Rebuild {
		return start, nil
	}
	var indexed []uint64
	var entries []indexEntry
	for _, f := range start.Fragments {
		if start.Covers(f.ID) && !o.Rebuild {
			continue
		}
		indexed = append(indexed, f.ID)
		err := t.scanKeys(ctx, start, f, func(r keyRow) {
			entries = append(entries, indexEntry{Key: r.key, Fragment: f.ID, Row: r.row, Seq: r.seq, Tombstone: r.tombstone})
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(entries, func(a, b indexEntry) int { return cmp.Compare(a.Key, b.Key) })
	var dropped, merged []IndexRun
	switch {
	case o.Rebuild && start.KeyIndex != nil:
		dropped = start.KeyIndex.Runs
	case start.KeyIndex != nil:
		// Like an upsert's or a compaction's run, the new run takes in the tail runs that are
		// small beside it (their entries no longer live in start go), so incremental builds keep
		// the run count logarithmic too.
		_, merged = tailRuns(start.KeyIndex.Runs, len(entries))
	}
	seg, err := t.writeMergedRun(ctx, start, merged, entries)
	if err != nil {
		return nil, err
	}
	m, err := t.commitWithRetry(ctx, "index", func(base *Manifest) (*Manifest, error) {
		next := base.next("index", t.now())
		if next.KeyIndex == nil {
			next.KeyIndex = &KeyIndex{}
		}
		next.KeyIndex.Runs = slices.DeleteFunc(next.KeyIndex.Runs, func(s IndexRun) bool {
			return slices.Contains(dropped, s)
		})
		next.KeyIndex.Runs = replaceRuns(next.KeyIndex.Runs, merged, seg)
		for _, id := range indexed {
			if _, ok := next.Fragment(id); ok {
				next.KeyIndex.Covered = insertSorted(next.KeyIndex.Covered, id)
			}
		}
		next.Counters.IndexBuilds++
		now := t.now()
		next.LastIndexAt = &now
		return next, nil
	})
	if err != nil && !isCommitUnknown(err) {
		t.deleteFiles([]string{seg.Path})
	}
	return m, err
}
