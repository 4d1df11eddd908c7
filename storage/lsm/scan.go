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
	"sort"
	"strings"

	"github.com/strata-store/strata/storage/predicate"
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
	Before  string         // when set, only keys less than this (the exclusive end of a key range)
	Where   predicate.Expr // when set, only rows it holds for (ANDed with Filters); parsed against the store's schema
	Limit   int            // page size (default 100, at most 10,000)
	Version uint64         // read a checkout of this base-table version (no WAL); 0 = the live view
	Cut     *Cut           // when set, read this cut (cut.go) instead of the live view
	Source  Source         // which rows: the base table, the WAL, or both (the default)
}

// Source selects the rows a read sees: lance-context's three views of a store.
type Source int

const (
	// SourceAll is the store as every read sees it: the base table overridden by the WAL
	// (this process's memtable and every shard's pending generations), newest row per key.
	SourceAll Source = iota
	// SourceBase is the base table alone (the latest version, or Version's): rows not yet merged
	// are missing, rows updated or deleted since the last merge appear as they were then.
	SourceBase
	// SourceWAL is the WAL alone: the newest pending version of every key that has one (keys
	// whose newest pending version is a delete are left out).
	SourceWAL
)

// ParseSource reads a source name: "all", "base" (or lance-context's "fragments"), "wal"; the
// empty string is SourceAll.
func ParseSource(name string) (Source, error) {
	switch name {
	case "", "all":
		return SourceAll, nil
	case "base", "fragments":
		return SourceBase, nil
	case "wal":
		return SourceWAL, nil
	}
	return 0, fmt.Errorf("%w: source must be all, base (or fragments) or wal, not %q", table.ErrSchema, name)
}

// String is the source's name, as ParseSource reads it.
func (s Source) String() string {
	switch s {
	case SourceBase:
		return "base"
	case SourceWAL:
		return "wal"
	}
	return "all"
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
	if opts.Source == SourceWAL && opts.Version != 0 {
		return ScanPage{}, fmt.Errorf("%w: a checkout of a base-table version has no WAL to read", table.ErrSchema)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, maxScanLimit)
	read, err := s.readColumns(names, opts.Filters, opts.Where)
	if err != nil {
		return ScanPage{}, err
	}
	return readFresh(ctx, s, func() (ScanPage, error) { return s.scanOnce(ctx, opts, names, read, limit) })
}

// readColumns is what a scan reads: the columns it returns, those its filters name, and the key.
func (s *Store) readColumns(names []string, filters map[string]any, where predicate.Expr) ([]string, error) {
	read := slices.Clone(names)
	for c := range filters {
		if !slices.Contains(read, c) {
			read = append(read, c)
		}
	}
	if where != nil {
		for _, c := range predicate.Columns(where) {
			if len(s.schema.FieldIndices(c)) == 0 {
				return nil, fmt.Errorf("%w: the filter names column %q, which the store does not have", table.ErrSchema, c)
			}
			if !slices.Contains(read, c) {
				read = append(read, c)
			}
		}
	}
	if !slices.Contains(read, s.keyColumn) {
		read = append(read, s.keyColumn)
	}
	return read, nil
}

// scanOnce builds one page on one snapshot; errVanished when a merge overtook it (nothing of the
// attempt is returned: the next attempt builds the page again from the same cursor).
func (s *Store) scanOnce(ctx context.Context, opts ScanOptions, names, read []string, limit int) (ScanPage, error) {
	mem, snap, gens, err := s.sourceView(ctx, opts.Source, readPoint{opts.Version, opts.Cut}, opts.After, opts.Before)
	if err != nil {
		return ScanPage{}, err
	}
	defer mem.Release()
	genRows := s.shards.NewRowReader()
	defer genRows.Release()

	sortMemRows(mem.Rows) // once per page
	out := newPageBuilder(s, read, names)
	defer out.release()
	out.where = opts.Where
	if len(opts.Filters) > 0 || opts.Where != nil {
		out.pruner = s.tbl.NewRowGroupPruner(snap.Table, opts.Filters, opts.Where)
	}
	cursor := opts.After
	chunk := max(limit, 256)
	for out.rows() < limit {
		// A filtered scan may read many chunks to fill one page: a done request stops it here.
		if err := ctx.Err(); err != nil {
			return ScanPage{}, err
		}
		base, end, exhausted, err := s.baseChunk(ctx, snap, opts.Source, cursor, opts.Before, chunk)
		if err != nil {
			return ScanPage{}, err
		}
		live := chunkVersions(base, mem.Rows, gens, cursor, end, exhausted, opts.Before)
		if err := out.add(ctx, snap, live, genRows, opts.Filters, limit); err != nil {
			return ScanPage{}, err
		}
		if exhausted {
			break
		}
		cursor = end
	}
	rec, err := out.finish()
	if err != nil {
		return ScanPage{}, err
	}
	page := ScanPage{Rows: rec}
	if out.rows() >= limit {
		page.Next = out.lastKey
	}
	return page, nil
}

// sourceView is what a read of source sees besides the base table: this process's memtable rows
// after after (taken before the snapshot: a seal in between leaves a row in both, and the newer
// _seq wins), the snapshot, and the pending generations' keys in (after, before). The caller
// releases the view. SourceBase and a checkout (version > 0) see no WAL; a cut sees its own
// generations, no memtable.
func (s *Store) sourceView(ctx context.Context, source Source, at readPoint, after, before string) (*shard.MemView, *Snapshot, []genView, error) {
	mem := &shard.MemView{}
	if w := s.residentWriter(); w != nil && at.live() && source != SourceBase {
		mem = w.View(after)
	}
	snap, err := s.snapshotAt(ctx, at)
	if err != nil {
		mem.Release()
		return nil, nil, nil, err
	}
	var gens []genView
	if source != SourceBase {
		if gens, err = s.generationViews(ctx, snap, after, before); err != nil {
			mem.Release()
			return nil, nil, nil, err
		}
	}
	return mem, snap, gens, nil
}

// baseChunk is the next chunk of up to chunk base-table keys after cursor (and below before,
// when set), in key order, and the chunk's last key; exhausted when no base key is left after
// it. SourceWAL reads no base key: its one chunk is every pending key.
func (s *Store) baseChunk(ctx context.Context, snap *Snapshot, source Source, cursor, before string, chunk int) (base []table.RowRef, end string, exhausted bool, err error) {
	if source == SourceWAL {
		return nil, "", true, nil
	}
	pastRange := false
	err = s.tbl.KeysAfter(ctx, snap.Table, cursor, func(r table.RowRef) bool {
		if before != "" && r.Key >= before {
			pastRange = true
			return false
		}
		base = append(base, r)
		return len(base) < chunk
	})
	if err != nil {
		return nil, "", false, err
	}
	exhausted = pastRange || len(base) < chunk
	if !exhausted {
		end = base[len(base)-1].Key
	}
	return base, end, exhausted, nil
}

// chunkVersions is the newest live version of every key in (cursor, end] (end unbounded when
// exhausted) and below before (when set), in key order: the base table's keys (base, in key
// order, already below before) overridden by newer memtable rows (memRows, in key order) and
// pending generations' keys.
func chunkVersions(base []table.RowRef, memRows []shard.MemRow, gens []genView, cursor, end string, exhausted bool, before string) []version {
	return newestVersions(base, memRows, gens, cursor, end, exhausted, before, false)
}

// newestVersions is chunkVersions that keeps the keys whose newest version is a delete too when
// withDeletes is set (what a reader that applies deletes itself needs: snapshotfiles.go).
func newestVersions(base []table.RowRef, memRows []shard.MemRow, gens []genView, cursor, end string, exhausted bool, before string, withDeletes bool) []version {
	within := func(k string) bool { return k > cursor && (exhausted || k <= end) && (before == "" || k < before) }
	lo, _ := slices.BinarySearchFunc(memRows, cursor, func(r shard.MemRow, k string) int {
		if r.Key <= k {
			return -1
		}
		return 1
	})
	hi := len(memRows)
	if !exhausted {
		hi, _ = slices.BinarySearchFunc(memRows, end, func(r shard.MemRow, k string) int {
			if r.Key <= k {
				return -1
			}
			return 1
		})
	}
	if before != "" {
		cut, _ := slices.BinarySearchFunc(memRows, before, func(r shard.MemRow, k string) int { return strings.Compare(r.Key, k) })
		hi = min(hi, cut)
	}
	hi = max(hi, lo)
	// Each generation's keys of this chunk start at its first key after the cursor (a chunk
	// after the page's first starts past the keys earlier chunks took).
	starts := make([]int, len(gens))
	pending := hi > lo
	for j, g := range gens {
		keys := g.keys.Keys
		starts[j] = g.start + sort.Search(len(keys)-g.start, func(i int) bool { return keys[g.start+i] > cursor })
		pending = pending || (starts[j] < len(keys) && within(keys[starts[j]]))
	}
	if !pending {
		// The common case of a merged store: the base keys are the chunk, already in order.
		out := make([]version, 0, len(base))
		for _, r := range base {
			if withDeletes || !r.Tombstone {
				out = append(out, tableVersion(r))
			}
		}
		return out
	}
	cands := make(map[string]version, len(base))
	offer := func(c version) {
		if c.supersedes(cands[c.key]) {
			cands[c.key] = c
		}
	}
	for _, r := range base {
		offer(tableVersion(r))
	}
	for i := lo; i < hi; i++ {
		offer(memtableVersion(&memRows[i]))
	}
	for j := range gens {
		g := &gens[j]
		for i := starts[j]; i < len(g.keys.Keys) && within(g.keys.Keys[i]); i++ {
			offer(generationVersion(g, i))
		}
	}
	out := make([]version, 0, len(cands))
	for _, c := range cands {
		if withDeletes || !c.tomb {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b version) int { return strings.Compare(a.key, b.key) })
	return out
}

// genView is a pending generation's keys after the scan's cursor (from start).
type genView struct {
	gen   shard.Generation
	shard string
	keys  *shard.KeyFile
	start int
}

func (s *Store) generationViews(ctx context.Context, snap *Snapshot, after, before string) ([]genView, error) {
	var out []genView
	for _, sh := range snap.Shards {
		for _, g := range sh.Generations {
			if g.MaxKey <= after || (before != "" && g.MinKey >= before) {
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

// pageBuilder accumulates a page's rows, in key order, as a few multi-row records: one per chunk
// (a chunk's rows are gathered column by column with take kernels and filtered with a selection
// vector — no per-row records).
type pageBuilder struct {
	s       *Store
	read    []string
	names   []string
	schema  *arrow.Schema // the read columns, as the store declares them
	parts   []arrow.RecordBatch
	n       int
	lastKey string
	// pruner (set when the scan filters) drops base-table rows whose row group's statistics
	// rule out every filter match, before they are read.
	pruner *table.RowGroupPruner
	where  predicate.Expr // the scan's predicate (nil: none)
	// forSearch: base rows are read with table.ReadRowsForSearch (their pages kept cached).
	forSearch bool
}

func newPageBuilder(s *Store, read, names []string) *pageBuilder {
	fields := make([]arrow.Field, len(read))
	for i, n := range read {
		fields[i] = s.schema.Field(s.schema.FieldIndices(n)[0])
	}
	return &pageBuilder{s: s, read: read, names: names, schema: arrow.NewSchema(fields, nil)}
}

func (p *pageBuilder) rows() int { return p.n }

func (p *pageBuilder) release() {
	for _, r := range p.parts {
		r.Release()
	}
	p.parts = nil
}

// add materialises the chunk's live versions (in key order), filters them and keeps rows until
// the page holds limit. Versions are gathered a slice at a time — the rows the page still needs
// (at least scanSliceRows when a filter may drop some) — so a chunk holding many pending keys
// never reads more rows than the page takes.
func (p *pageBuilder) add(ctx context.Context, snap *Snapshot, live []version, genRows *shard.RowReader, filters map[string]any, limit int) error {
	if p.pruner != nil {
		kept := live[:0] // live is this chunk's own slice
		for _, v := range live {
			if v.src == sourceTable {
				may, err := p.pruner.MayMatch(ctx, v.ref())
				if err != nil {
					return err
				}
				if !may {
					continue
				}
			}
			kept = append(kept, v)
		}
		live = kept
	}
	for len(live) > 0 && p.n < limit {
		n := min(len(live), limit-p.n)
		if len(filters) > 0 || p.where != nil {
			n = min(len(live), max(n, scanSliceRows))
		}
		if err := p.addSlice(ctx, snap, live[:n], genRows, filters, limit); err != nil {
			return err
		}
		live = live[n:]
	}
	return nil
}

// scanSliceRows is the fewest versions gathered at once while a filter decides what a page keeps.
const scanSliceRows = 256

// addSlice gathers, filters and keeps (up to limit) the rows of some of a chunk's versions.
func (p *pageBuilder) addSlice(ctx context.Context, snap *Snapshot, live []version, genRows *shard.RowReader, filters map[string]any, limit int) error {
	rec, err := p.gather(ctx, snap, live, genRows)
	if err != nil {
		return err
	}
	defer rec.Release()
	sel, err := selectRows(ctx, rec, filters, p.where, limit-p.n)
	if err != nil {
		return err
	}
	if len(sel) == 0 {
		return nil
	}
	var kept arrow.RecordBatch
	if int64(sel[len(sel)-1]) == int64(len(sel)-1) { // a prefix: no copy
		kept = rec.NewSlice(0, int64(len(sel)))
	} else if kept, err = arrowutil.Take(ctx, p.s.mem, rec, sel); err != nil {
		return err
	}
	p.parts = append(p.parts, kept)
	p.n += len(sel)
	p.lastKey = live[sel[len(sel)-1]].key
	return nil
}

// gather returns the read columns of the versions' rows, in their order: the base table's rows in
// one read (in order), each pending record's rows taken once, then the sources interleaved by one
// take over their concatenation.
func (p *pageBuilder) gather(ctx context.Context, snap *Snapshot, live []version, genRows *shard.RowReader) (arrow.RecordBatch, error) {
	var refs []table.RowRef
	for _, v := range live {
		if v.src == sourceTable {
			if refs == nil {
				refs = make([]table.RowRef, 0, len(live))
			}
			refs = append(refs, v.ref())
		}
	}
	var parts []arrow.RecordBatch
	defer func() {
		for _, r := range parts {
			r.Release()
		}
	}()
	if len(refs) > 0 {
		read := p.s.tbl.ReadRows
		if p.forSearch {
			read = p.s.tbl.ReadRowsForSearch
		}
		base, err := read(ctx, snap.Table, refs, p.read)
		if err != nil {
			return nil, err
		}
		parts = append(parts, base)
		if len(refs) == len(live) {
			base.Retain()
			return base, nil
		}
	}
	// Pending rows, grouped by the record holding them.
	type pick struct{ src, row int }
	picks := make([]pick, len(live))
	sources := map[arrow.RecordBatch]int{}
	var srcRecs []arrow.RecordBatch
	var srcRows [][]int64
	bi := 0
	for i, v := range live {
		if v.src == sourceTable {
			picks[i] = pick{-1, bi}
			bi++
			continue
		}
		rec, row, err := pendingRow(ctx, v, genRows)
		if err != nil {
			return nil, err
		}
		si, ok := sources[rec]
		if !ok {
			si = len(srcRecs)
			sources[rec] = si
			srcRecs = append(srcRecs, rec)
			srcRows = append(srcRows, nil)
		}
		picks[i] = pick{si, len(srcRows[si])}
		srcRows[si] = append(srcRows[si], int64(row))
	}
	offsets := make([]int64, len(srcRecs)) // where each source's taken rows start in the concatenation
	at := int64(bi)
	for si, rec := range srcRecs {
		proj, err := project(rec, p.read)
		if err != nil {
			return nil, err
		}
		taken, err := arrowutil.Take(ctx, p.s.mem, proj, srcRows[si])
		proj.Release()
		if err != nil {
			return nil, err
		}
		parts = append(parts, taken)
		offsets[si] = at
		at += taken.NumRows()
	}
	all, err := arrowutil.Concat(p.schema, parts, p.s.mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	order := make([]int64, len(live))
	for i, pk := range picks {
		if pk.src < 0 {
			order[i] = int64(pk.row)
		} else {
			order[i] = offsets[pk.src] + int64(pk.row)
		}
	}
	return arrowutil.Take(ctx, p.s.mem, all, order)
}

// finish concatenates the page and projects it to the requested columns.
func (p *pageBuilder) finish() (arrow.RecordBatch, error) {
	all, err := arrowutil.Concat(p.schema, p.parts, p.s.mem)
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

// selectRows returns the indices of rec's first (at most max) rows that satisfy every equality
// filter, evaluated column by column.
func selectRows(ctx context.Context, rec arrow.RecordBatch, filters map[string]any, where predicate.Expr, max int) ([]int64, error) {
	n := int(rec.NumRows())
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = true
	}
	if where != nil {
		var err error
		if keep, err = predicate.Select(ctx, where, rec); err != nil {
			return nil, err
		}
	}
	for col, want := range filters {
		arr := rec.Column(rec.Schema().FieldIndices(col)[0])
		if err := matchColumn(arr, want, keep); err != nil {
			return nil, err
		}
	}
	sel := make([]int64, 0, min(n, max))
	for i := 0; i < n && len(sel) < max; i++ {
		if keep[i] {
			sel = append(sel, int64(i))
		}
	}
	return sel, nil
}

// matchColumn clears keep[i] for every row of arr that is null or differs from want (a filter
// value checkFilters accepted for the column's type).
func matchColumn(arr arrow.Array, want any, keep []bool) error {
	if w, ok := want.(int); ok {
		want = int64(w)
	}
	var eq func(i int) bool
	switch a := arr.(type) {
	case *array.String, *array.LargeString:
		text := a.(interface{ Value(int) string })
		w, _ := want.(string)
		eq = func(i int) bool { return text.Value(i) == w }
	case *array.Boolean:
		w, _ := want.(bool)
		eq = func(i int) bool { return a.Value(i) == w }
	case *array.Int8:
		eq = intEq(a.Value, want)
	case *array.Int16:
		eq = intEq(a.Value, want)
	case *array.Int32:
		eq = intEq(a.Value, want)
	case *array.Int64:
		eq = intEq(a.Value, want)
	case *array.Uint8:
		eq = intEq(a.Value, want)
	case *array.Uint16:
		eq = intEq(a.Value, want)
	case *array.Uint32:
		eq = intEq(a.Value, want)
	case *array.Uint64:
		eq = intEq(a.Value, want)
	case *array.Float32:
		w, _ := want.(float64)
		eq = func(i int) bool { return float64(a.Value(i)) == w }
	case *array.Float64:
		w, _ := want.(float64)
		eq = func(i int) bool { return a.Value(i) == w }
	default:
		return fmt.Errorf("%w: cannot filter on a %s column", table.ErrSchema, arr.DataType())
	}
	for i := range keep {
		if keep[i] && (arr.IsNull(i) || !eq(i)) {
			keep[i] = false
		}
	}
	return nil
}

// intEq compares an integer column's values with want (an int64 filter value), exactly: an
// unsigned value past the int64 range equals no filter value.
func intEq[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](value func(int) T, want any) func(int) bool {
	w, _ := want.(int64)
	return func(i int) bool {
		v := value(i)
		if v < 0 {
			return int64(v) == w
		}
		return uint64(v) == uint64(w) && w >= 0
	}
}
