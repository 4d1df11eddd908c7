// Upsert (merge-insert by key): newest _seq wins within the batch and against the table; replaced
// rows are masked in deletion vectors; new rows go to one new fragment (sorted by key) that the
// key index is extended to cover; everything becomes visible in one manifest commit.
//
// Prepare reads and computes against a manifest and writes only new, unreferenced files; Commit
// publishes them by creating the next version. If another writer committed that version first,
// Commit re-prepares against the new latest manifest (so the decision "which stored row does this
// row replace, and is it newer" is always made against exactly the version it commits on top
// of), a bounded number of times.
package table

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/strata-store/strata/storage/fragment"
	"golang.org/x/sync/errgroup"
)

// UpsertOptions qualify an upsert.
type UpsertOptions struct {
	// Watermarks advance per-shard WAL watermarks (shard -> last merged generation) in the same
	// commit as the rows; a watermark never moves backwards.
	Watermarks map[string]uint64
	// Merge marks the upsert as a WAL merge (counters and last_merge_at).
	Merge bool
	// Precondition, when set, is checked against every manifest the upsert prepares on; an error
	// aborts the upsert with nothing committed (a WAL merge uses it to stop when a racing merge
	// already advanced the watermark past its generations).
	Precondition func(base *Manifest) error
	// UncompressedBelowRows: a fragment of fewer rows is written with uncompressed pages (a WAL
	// merge passes the compaction's target: compaction rewrites such a fragment, compressed,
	// with its size tier). 0 compresses every fragment.
	UncompressedBelowRows int64
}

// UpsertResult reports what an upsert did.
type UpsertResult struct {
	Manifest  *Manifest // the committed version (the unchanged latest when nothing was committed)
	Committed bool
	Inserted  int // keys new to the table
	Replaced  int // keys whose stored row was older
	Stale     int // rows dropped: the table (or the batch) held a newer _seq for their key
}

// PreparedUpsert is an upsert whose files are written but not committed. Release it when done.
type PreparedUpsert struct {
	t      *Table
	parts  []arrow.RecordBatch // the rows, laid end to end (retained; nil once released)
	opts   UpsertOptions
	base   *Manifest
	next   *Manifest
	mu     sync.Mutex // guards files while an attempt writes objects concurrently
	files  []string
	result UpsertResult
}

// Upsert prepares and commits in one call.
func (t *Table) Upsert(ctx context.Context, rec arrow.RecordBatch, opts UpsertOptions) (UpsertResult, error) {
	return t.UpsertParts(ctx, []arrow.RecordBatch{rec}, opts)
}

// UpsertParts is Upsert of the rows of parts laid end to end (records of one schema, e.g. the WAL
// batches of a merge): the parts are never joined into one record; the rows written are gathered
// from them directly (arrowutil.TakeParts).
func (t *Table) UpsertParts(ctx context.Context, parts []arrow.RecordBatch, opts UpsertOptions) (UpsertResult, error) {
	p, err := t.PrepareUpsertParts(ctx, parts, opts)
	if err != nil {
		return UpsertResult{}, err
	}
	defer p.Release()
	return p.Commit(ctx)
}

// PrepareUpsert validates rec (it must hold the key column and a non-null uint64 _seq column;
// _tombstone is optional) and prepares it against the latest manifest.
func (t *Table) PrepareUpsert(ctx context.Context, rec arrow.RecordBatch, opts UpsertOptions) (*PreparedUpsert, error) {
	return t.PrepareUpsertParts(ctx, []arrow.RecordBatch{rec}, opts)
}

// PrepareUpsertParts is PrepareUpsert of the rows of parts laid end to end (at least one record;
// all of one schema).
func (t *Table) PrepareUpsertParts(ctx context.Context, parts []arrow.RecordBatch, opts UpsertOptions) (*PreparedUpsert, error) {
	if len(parts) == 0 {
		return nil, schemaErr("an upsert needs at least one batch")
	}
	for _, rec := range parts {
		if !rec.Schema().Equal(parts[0].Schema()) {
			return nil, schemaErr("the batches of one upsert must have one schema")
		}
		if err := checkUpsertBatch(rec); err != nil {
			return nil, err
		}
	}
	base, err := t.Latest(ctx)
	if err != nil {
		return nil, err
	}
	for _, rec := range parts {
		rec.Retain()
	}
	p := &PreparedUpsert{t: t, parts: parts, opts: opts}
	if err := p.prepare(ctx, base); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

func checkUpsertBatch(rec arrow.RecordBatch) error {
	idx := rec.Schema().FieldIndices(SeqColumn)
	if len(idx) == 0 || rec.Column(idx[0]).DataType().ID() != arrow.UINT64 || rec.Column(idx[0]).NullN() > 0 {
		return schemaErr("an upsert batch needs a non-null uint64 %s column", SeqColumn)
	}
	if idx := rec.Schema().FieldIndices(TombstoneColumn); len(idx) > 0 && rec.Column(idx[0]).DataType().ID() != arrow.BOOL {
		return schemaErr("%s must be bool", TombstoneColumn)
	}
	return nil
}

// Release frees the batch and removes files of a prepared upsert that was never committed.
func (p *PreparedUpsert) Release() {
	for _, rec := range p.parts {
		rec.Release()
	}
	p.parts = nil
	p.t.deleteFiles(p.files)
	p.files = nil
}

// Commit publishes the prepared upsert, re-preparing against newer versions as needed.
func (p *PreparedUpsert) Commit(ctx context.Context) (UpsertResult, error) {
	if p.parts == nil {
		return UpsertResult{}, errors.New("table: upsert already released")
	}
	m, err := p.t.commitWithRetry(ctx, "upsert", func(base *Manifest) (*Manifest, error) {
		if base.Version != p.base.Version {
			p.t.deleteFiles(p.files)
			p.files = nil
			if err := p.prepare(ctx, base); err != nil {
				return nil, err
			}
		}
		return p.next, nil
	})
	if errors.Is(err, errCommitUnknown) {
		p.files = nil // possibly referenced now: only cleanup may decide
	}
	if err != nil {
		return UpsertResult{}, err
	}
	res := p.result
	res.Manifest = m
	res.Committed = p.next != nil
	if res.Committed {
		p.files = nil // now referenced by the table
		p.t.metrics.rowsUpserted.Add(float64(res.Inserted + res.Replaced))
		p.t.metrics.staleRowsSkipped.Add(float64(res.Stale))
	}
	return res, nil
}

// location is where a key's live row is stored.
type location struct {
	fragment  uint64
	row       int64
	seq       uint64
	tombstone bool
}

// locate finds the live row of each key (sorted, distinct) in m: through the key index, then by
// scanning the key columns of fragments the index does not cover.
func (t *Table) locate(ctx context.Context, m *Manifest, keys []string) (map[string]location, error) {
	out := make(map[string]location, len(keys))
	if len(m.Fragments) == 0 {
		return out, nil
	}
	hits, err := t.indexLookup(ctx, m, keys)
	if err != nil {
		return nil, err
	}
	for k, e := range hits {
		out[k] = location{fragment: e.Fragment, row: e.Row, seq: e.Seq, tombstone: e.Tombstone}
	}
	var uncovered []Fragment
	for _, f := range m.Fragments {
		if !m.Covers(f.ID) && f.LiveRows() > 0 {
			uncovered = append(uncovered, f)
		}
	}
	if len(uncovered) == 0 || len(out) == len(keys) {
		return out, nil
	}
	t.metrics.UnindexedKeyScans.Inc()
	want := make(map[string]bool, len(keys)-len(out))
	for _, k := range keys {
		if _, ok := out[k]; !ok {
			want[k] = true
		}
	}
	for _, f := range uncovered {
		err := t.scanKeys(ctx, m, f, func(r keyRow) {
			if want[r.key] {
				out[r.key] = location{fragment: f.ID, row: r.row, seq: r.seq, tombstone: r.tombstone}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// prepare computes and writes everything for committing p.parts on top of base.
func (p *PreparedUpsert) prepare(ctx context.Context, base *Manifest) error {
	t := p.t
	p.base, p.next, p.result = base, nil, UpsertResult{}
	if p.opts.Precondition != nil {
		if err := p.opts.Precondition(base); err != nil {
			return err
		}
	}
	schema, schemaChanged, err := evolve(base.Schema(), p.parts[0].Schema())
	if err != nil {
		return err
	}
	parts := make([]arrow.RecordBatch, 0, len(p.parts))
	defer func() {
		for _, rec := range parts {
			rec.Release()
		}
	}()
	for _, part := range p.parts {
		rec, err := align(part, schema, t.mem)
		if err != nil {
			return err
		}
		parts = append(parts, rec)
	}
	// The key and _seq columns across the parts (joined: a few bytes a row; the other columns
	// are gathered from the parts only for the rows written).
	keyCol, err := joinColumn(parts, schema.FieldIndices(base.KeyColumn)[0], t.mem)
	if err != nil {
		return err
	}
	defer keyCol.Release()
	seqCol, err := joinColumn(parts, schema.FieldIndices(SeqColumn)[0], t.mem)
	if err != nil {
		return err
	}
	defer seqCol.Release()
	keys, ok := keyCol.(*array.String)
	if !ok {
		return schemaErr("the key column %q must be a string column", base.KeyColumn)
	}
	seqs := seqCol.(*array.Uint64)

	sortedKeys, newest, stale := newestPerKey(keys, seqs)
	p.result.Stale += stale

	stored, err := t.locate(ctx, base, sortedKeys)
	if err != nil {
		return err
	}
	var rows []int64
	replaced := map[uint64][]uint32{} // fragment -> rows to mask
	var maxSeq uint64
	for n, k := range sortedKeys {
		i := newest[n]
		seq := seqs.Value(i)
		if loc, ok := stored[k]; ok {
			if loc.seq >= seq {
				p.result.Stale++
				continue
			}
			replaced[loc.fragment] = append(replaced[loc.fragment], uint32(loc.row))
			p.result.Replaced++
		} else {
			p.result.Inserted++
		}
		rows = append(rows, int64(i))
		maxSeq = max(maxSeq, seq)
	}

	watermarksChanged := false
	for shard, g := range p.opts.Watermarks {
		if g > base.WALWatermarks[shard] {
			watermarksChanged = true
		}
	}
	if len(rows) == 0 && !watermarksChanged && !schemaChanged {
		return nil // nothing to commit
	}

	op := "upsert"
	if p.opts.Merge {
		op = "merge"
	}
	now := t.now()
	next := base.next(op, now)
	if schemaChanged {
		if err := next.setSchema(schema); err != nil {
			return err
		}
	}
	for shard, g := range p.opts.Watermarks {
		next.WALWatermarks[shard] = max(next.WALWatermarks[shard], g)
	}
	next.MaxSeq = max(next.MaxSeq, maxSeq)
	next.Counters.Upserts++
	next.Counters.RowsUpserted += uint64(len(rows))
	if p.opts.Merge {
		next.Counters.Merges++
		next.LastMergeAt = &now
	}

	// Mask replaced rows (one deletion object for every fragment touched) and write the new rows;
	// the two objects are independent, so they are written concurrently.
	bitmaps := make(map[uint64]*roaring.Bitmap, len(replaced))
	for id, masked := range replaced {
		f, _ := next.Fragment(id)
		old, err := t.deletions(ctx, f)
		if err != nil {
			return err
		}
		bm := old.Clone()
		bm.AddMany(masked)
		bitmaps[id] = bm
	}
	var frag Fragment
	var entries []indexEntry
	fragID := next.newFragmentID()
	g, gctx := errgroup.WithContext(ctx)
	if len(bitmaps) > 0 {
		g.Go(func() error {
			path, err := t.writeDeletionSet(gctx, next, bitmaps)
			if path != "" {
				p.addFile(path)
			}
			return err
		})
	}
	if len(rows) > 0 {
		g.Go(func() (err error) {
			frag, entries, err = p.writeRows(gctx, parts, rows, fragID, next.KeyColumn)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if len(rows) > 0 {
		next.addFragment(frag)
		if next.KeyIndex != nil {
			if err := p.extendIndex(ctx, next, frag.ID, entries); err != nil {
				return err
			}
		}
	}
	p.next = next
	return nil
}

// newestPerKey picks the row with the newest _seq of each distinct key of a batch (a later row
// wins a tie): the keys in order, the row of each, and how many rows lost. One sort of (key,
// row) pairs, not a map of every key and a sort of its keys besides. The keys returned are the
// batch's own strings (valid while keys is).
func newestPerKey(keys *array.String, seqs *array.Uint64) (sorted []string, rows []int, stale int) {
	type keyAt struct {
		key string
		row int
	}
	pairs := make([]keyAt, keys.Len())
	for i := range pairs {
		pairs[i] = keyAt{keys.Value(i), i}
	}
	slices.SortFunc(pairs, func(a, b keyAt) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	})
	sorted, rows = make([]string, 0, len(pairs)), make([]int, 0, len(pairs))
	for i := 0; i < len(pairs); {
		best, j := pairs[i].row, i+1
		for ; j < len(pairs) && pairs[j].key == pairs[i].key; j++ { // later rows of the key
			stale++
			if seqs.Value(pairs[j].row) >= seqs.Value(best) {
				best = pairs[j].row
			}
		}
		sorted, rows = append(sorted, pairs[i].key), append(rows, best)
		i = j
	}
	return sorted, rows, stale
}

// joinColumn is column c of every part, as one array (the part's own when there is one).
func joinColumn(parts []arrow.RecordBatch, c int, mem memory.Allocator) (arrow.Array, error) {
	if len(parts) == 1 {
		col := parts[0].Column(c)
		col.Retain()
		return col, nil
	}
	chunks := make([]arrow.Array, len(parts))
	for i, p := range parts {
		chunks[i] = p.Column(c)
	}
	return array.Concatenate(chunks, mem)
}

// writeRows writes rows of parts (laid end to end; rows already sorted by key) as new fragment
// id and returns it with its index entries.
func (p *PreparedUpsert) writeRows(ctx context.Context, parts []arrow.RecordBatch, rows []int64, id uint64, keyColumn string) (Fragment, []indexEntry, error) {
	frag, entries, err := p.t.writeRowsAsFragment(ctx, parts, rows, id, keyColumn, upsertCodec(int64(len(rows)), p.opts.UncompressedBelowRows))
	if frag.Path != "" {
		p.addFile(frag.Path)
	}
	return frag, entries, err
}

// addFile records a file this attempt wrote (deleted if the attempt is abandoned).
func (p *PreparedUpsert) addFile(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files = append(p.files, path)
}

// fragmentPath names a new data file for fragment id (random: a retried write never collides).
func fragmentPath(id uint64) string {
	return fmt.Sprintf("%s%016x-%s.parquet", dataDir, id, randomName())
}

// extendIndex adds entries for fragment id as a new run, merging it into the tail runs
// while they are small by comparison (tierRatio), and marks the fragment covered.
func (p *PreparedUpsert) extendIndex(ctx context.Context, next *Manifest, id uint64, entries []indexEntry) error {
	segs, files, err := p.t.appendRun(ctx, next, next.KeyIndex.Runs, entries)
	for _, f := range files {
		p.addFile(f)
	}
	if err != nil {
		return err
	}
	next.KeyIndex.Runs = segs
	next.KeyIndex.Covered = insertSorted(next.KeyIndex.Covered, id)
	return nil
}

// appendRun returns segs with entries appended as a new run, tail runs merged in
// while they hold fewer than tierRatio times the new run's entries (the merge streams: see
// mergeRuns). It returns the files written.
func (t *Table) appendRun(ctx context.Context, m *Manifest, segs []IndexRun, entries []indexEntry) ([]IndexRun, []string, error) {
	keep, older := tailRuns(segs, len(entries))
	seg, err := t.writeMergedRun(ctx, m, older, entries)
	if err != nil {
		return nil, nil, err
	}
	return append(slices.Clone(keep), seg), []string{seg.Path}, nil
}

func insertSorted(s []uint64, v uint64) []uint64 {
	i, ok := slices.BinarySearch(s, v)
	if ok {
		return s
	}
	return slices.Insert(s, i, v)
}

// upsertCodec is the page codec of an upsert's fragment of n rows: none when n is below
// uncompressedBelow (a WAL merge passes the compaction's target, so the fragment is a compaction
// candidate from its commit on, and the compaction that takes it in compresses its rows: LZ4 at
// the merge too would be paid twice, for bytes kept only until then; the first level of an LSM
// tree left uncompressed), fragment.Codec otherwise.
func upsertCodec(n, uncompressedBelow int64) compress.Compression {
	if n < uncompressedBelow {
		return compress.Codecs.Uncompressed
	}
	return fragment.Codec
}
