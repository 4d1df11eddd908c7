// Scans: keyset-paginated reads of a store in key order, newest row per key across this
// process's memtables, every shard's pending generations and the base table, with tombstones
// applied, equality filters ANDed, and projection.
//
// A page is built in chunks: the next chunk of base-table keys after the cursor comes from the
// key index in key order (table.KeysAfter), and the pending sources contribute their keys up to
// the chunk's last key. Memory and I/O are proportional to the chunks a page needs, not to the
// store (a selective filter needs more chunks, as any scan without a secondary index would).
package lsm

import (
	"context"
	"fmt"
	"slices"

	"github.com/strata-store/strata/storage/shard"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/table"
)

// ScanOptions select a page.
type ScanOptions struct {
	Columns []string       // user columns to return (all when empty)
	Filters map[string]any // column == value, ANDed; values: string, bool, int/int64, float64
	After   string         // keyset cursor: only keys greater than this
	Limit   int            // page size (default 100, at most 10,000)
	Version uint64         // read a checkout of this base-table version (no WAL); 0 = the live view
}

// ScanPage is one page of a scan.
type ScanPage struct {
	Rows arrow.RecordBatch // the page's rows in key order (never nil; the caller releases it)
	Next string            // the cursor for the next page; empty when there are no more rows
}

const maxScanLimit = 10_000

// Scan returns one page.
func (s *Store) Scan(ctx context.Context, opts ScanOptions) (ScanPage, error) {
	names, err := s.columns(opts.Columns)
	if err != nil {
		return ScanPage{}, err
	}
	if err := s.checkFilters(opts.Filters); err != nil {
		return ScanPage{}, err
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, maxScanLimit)
	read := slices.Clone(names)
	for c := range opts.Filters {
		if !slices.Contains(read, c) {
			read = append(read, c)
		}
	}
	if !slices.Contains(read, s.keyColumn) {
		read = append(read, s.keyColumn)
	}
	return readFresh(ctx, s, func() (ScanPage, error) { return s.scanOnce(ctx, opts, names, read, limit) })
}

// scanOnce builds one page on one snapshot; errVanished when a merge overtook it (nothing of the
// attempt is returned: the next attempt builds the page again from the same cursor).
func (s *Store) scanOnce(ctx context.Context, opts ScanOptions, names, read []string, limit int) (ScanPage, error) {
	mem := &shard.MemView{}
	if w := s.residentWriter(); w != nil && opts.Version == 0 {
		mem = w.View(opts.After)
	}
	defer mem.Release()
	snap, err := s.SnapshotAt(ctx, opts.Version)
	if err != nil {
		return ScanPage{}, err
	}
	gens, err := s.generationViews(ctx, snap, opts.After)
	if err != nil {
		return ScanPage{}, err
	}
	genRows := s.shards.NewRowReader()
	defer genRows.Release()

	out := newPageBuilder(s, read, names)
	defer out.release()
	cursor := opts.After
	chunk := max(limit, 256)
	for out.rows() < limit {
		var base []table.RowRef
		err := s.tbl.KeysAfter(ctx, snap.Table, cursor, func(r table.RowRef) bool {
			base = append(base, r)
			return len(base) < chunk
		})
		if err != nil {
			return ScanPage{}, err
		}
		end, exhausted := "", len(base) < chunk
		if !exhausted {
			end = base[len(base)-1].Key
		}
		within := func(k string) bool { return k > cursor && (exhausted || k <= end) }

		cands := map[string]version{}
		offer := func(c version) {
			if c.supersedes(cands[c.key]) {
				cands[c.key] = c
			}
		}
		for _, r := range base {
			offer(tableVersion(r))
		}
		for _, r := range mem.Rows {
			if within(r.Key) {
				offer(memtableVersion(r))
			}
		}
		for _, g := range gens {
			for i := g.start; i < len(g.keys.Keys) && within(g.keys.Keys[i]); i++ {
				offer(generationVersion(g.shard, g.gen, g.keys, i))
			}
		}
		keys := make([]string, 0, len(cands))
		for k, c := range cands {
			if !c.tomb {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		if err := out.add(ctx, snap, keys, cands, genRows, opts.Filters, limit); err != nil {
			return ScanPage{}, err
		}
		if exhausted {
			break
		}
		cursor = end
	}
	rec, err := out.finish(ctx)
	if err != nil {
		return ScanPage{}, err
	}
	page := ScanPage{Rows: rec}
	if out.rows() >= limit {
		page.Next = out.lastKey
	}
	return page, nil
}

// genView is a pending generation's keys after the scan's cursor (from start).
type genView struct {
	gen   shard.Generation
	shard string
	keys  *shard.KeyFile
	start int
}

func (s *Store) generationViews(ctx context.Context, snap *Snapshot, after string) ([]genView, error) {
	var out []genView
	for _, sh := range snap.Shards {
		for _, g := range sh.Generations {
			if g.MaxKey <= after {
				continue
			}
			k, err := s.shards.KeyFile(ctx, g)
			if err != nil {
				return nil, vanished(err, sh.Shard, g)
			}
			i, found := k.Find(after)
			if found {
				i++
			}
			out = append(out, genView{gen: g, shard: sh.Shard, keys: k, start: i})
		}
	}
	return out, nil
}

// pageBuilder accumulates a page's rows as one-row slices (in key order).
type pageBuilder struct {
	s       *Store
	read    []string
	names   []string
	parts   []arrow.RecordBatch
	lastKey string
}

func newPageBuilder(s *Store, read, names []string) *pageBuilder {
	return &pageBuilder{s: s, read: read, names: names}
}

func (p *pageBuilder) rows() int { return len(p.parts) }

func (p *pageBuilder) release() {
	for _, r := range p.parts {
		r.Release()
	}
	p.parts = nil
}

// add materialises the chunk's live keys (in order), filters them and keeps up to limit rows.
func (p *pageBuilder) add(ctx context.Context, snap *Snapshot, keys []string, cands map[string]version, genRows *shard.RowReader, filters map[string]any, limit int) error {
	var refs []table.RowRef
	for _, k := range keys {
		if c := cands[k]; c.src == sourceTable {
			refs = append(refs, c.ref)
		}
	}
	var baseRows arrow.RecordBatch
	if len(refs) > 0 {
		var err error
		if baseRows, err = p.s.tbl.ReadRows(ctx, snap.Table, refs, p.read); err != nil {
			return err
		}
		defer baseRows.Release()
	}
	bi := 0
	for _, k := range keys {
		if len(p.parts) >= limit {
			return nil
		}
		c := cands[k]
		var src arrow.RecordBatch
		var row int
		if c.src == sourceTable {
			src, row = baseRows, bi
			bi++
		} else {
			var err error
			if src, row, err = pendingRow(ctx, c, genRows); err != nil {
				return err
			}
		}
		slice := src.NewSlice(int64(row), int64(row)+1)
		one, err := project(slice, p.read)
		slice.Release()
		if err != nil {
			return err
		}
		if !matches(one, filters) {
			one.Release()
			continue
		}
		p.parts = append(p.parts, one)
		p.lastKey = k
	}
	return nil
}

// finish concatenates the page and projects it to the requested columns.
func (p *pageBuilder) finish(ctx context.Context) (arrow.RecordBatch, error) {
	fields := make([]arrow.Field, len(p.read))
	for i, n := range p.read {
		fields[i] = p.s.schema.Field(p.s.schema.FieldIndices(n)[0])
	}
	all, err := arrowutil.Concat(arrow.NewSchema(fields, nil), p.parts, p.s.mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	return project(all, p.names)
}

// checkFilters validates filter columns and value types against the schema.
func (s *Store) checkFilters(filters map[string]any) error {
	for col, v := range filters {
		idx := s.schema.FieldIndices(col)
		if len(idx) == 0 || col == table.SeqColumn || col == table.TombstoneColumn {
			return fmt.Errorf("%w: cannot filter on unknown column %q", table.ErrSchema, col)
		}
		t := s.schema.Field(idx[0]).Type.ID()
		ok := false
		switch v.(type) {
		case string:
			ok = t == arrow.STRING || t == arrow.LARGE_STRING
		case bool:
			ok = t == arrow.BOOL
		case int, int64:
			ok = t == arrow.INT8 || t == arrow.INT16 || t == arrow.INT32 || t == arrow.INT64 ||
				t == arrow.UINT8 || t == arrow.UINT16 || t == arrow.UINT32 || t == arrow.UINT64
		case float64:
			ok = t == arrow.FLOAT32 || t == arrow.FLOAT64
		}
		if !ok {
			return fmt.Errorf("%w: filter on %q: a %T cannot equal a %s column", table.ErrSchema, col, v, s.schema.Field(idx[0]).Type)
		}
	}
	return nil
}

// matches reports whether the one-row record satisfies every equality filter.
func matches(rec arrow.RecordBatch, filters map[string]any) bool {
	for col, want := range filters {
		arr := rec.Column(rec.Schema().FieldIndices(col)[0])
		if arr.IsNull(0) {
			return false
		}
		var got any
		switch a := arr.(type) {
		case *array.String:
			got = a.Value(0)
		case *array.LargeString:
			got = a.Value(0)
		case *array.Boolean:
			got = a.Value(0)
		case *array.Int8:
			got = int64(a.Value(0))
		case *array.Int16:
			got = int64(a.Value(0))
		case *array.Int32:
			got = int64(a.Value(0))
		case *array.Int64:
			got = a.Value(0)
		case *array.Uint8:
			got = int64(a.Value(0))
		case *array.Uint16:
			got = int64(a.Value(0))
		case *array.Uint32:
			got = int64(a.Value(0))
		case *array.Uint64:
			got = int64(a.Value(0))
		case *array.Float32:
			got = float64(a.Value(0))
		case *array.Float64:
			got = a.Value(0)
		}
		if w, ok := want.(int); ok {
			want = int64(w)
		}
		if got != want {
			return false
		}
	}
	return true
}
