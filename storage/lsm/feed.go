// The change feed: the rows that became visible after a cursor (feedcursor.go), batch by batch.
//
// Rows become feed-visible when sealed into a generation, which is when other workers see them
// too. A batch reads every shard's generations after the cursor's position for that shard —
// pending ones and retained ones (merged, kept for consumers: storage/shard's retained.go rule),
// from the shard manifest's two lists, which a merge edits in one commit — oldest sealed first
// across shards, each shard's in generation order, a slice of keys at a time; and stops once it
// holds the batch's rows, inside a generation if need be (the cursor records the offset).
//
// A generation's rows are its key file's: the newest version of each key within the generation,
// deletes as tombstone rows. Within a batch a key appears once, at its newest version.
//
// Grouped feeds (FeedGroups) deliver rows in groups: rows with equal values of a column are held
// back until Size distinct keys have them (the group is complete) or, after Timeout, delivered
// flagged incomplete; a group is never split across batches. Rows held back are listed in the
// cursor, read again by the next batch, and delivered exactly once.
//
// Expiry: a position needs the generations after it. When one of them was released (past its
// retention, or held by nobody), the batch fails with *FeedExpiredError, naming where the
// consumer can restart: the base table at a version, then the feed from a cursor at that
// version's watermarks.
package lsm

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

// Columns a feed batch adds after the user columns.
const (
	FeedOpColumn       = "_op"       // "upsert" or "delete"
	FeedCompleteColumn = "_complete" // grouped feeds: the row's group is complete (null: not grouped)
	FeedOpUpsert       = "upsert"
	FeedOpDelete       = "delete"
)

// Feed batch bounds.
const (
	DefaultFeedLimit = 1000
	MaxFeedLimit     = 100_000
	// DefaultFeedMaxHeld bounds the rows a grouped feed holds back (in the cursor) by default.
	DefaultFeedMaxHeld = 10_000
	// DefaultFeedMaxBytes bounds the rows' bytes a batch gathers (the batch ends early past it).
	DefaultFeedMaxBytes = 64 << 20
	// feedSliceRows: keys of a generation read at once.
	feedSliceRows = 1024
)

// FeedOptions select a change-feed batch.
type FeedOptions struct {
	Limit   int         // rows per batch (default DefaultFeedLimit, at most MaxFeedLimit); a group may exceed it
	Columns []string    // user columns (all when empty); the key column is always returned
	Groups  *FeedGroups // deliver complete groups (nil: rows as they come)
	Now     time.Time   // the time group timeouts are measured at (zero: now)
	// MaxBytes bounds the bytes of the rows a batch gathers, held ones included (default
	// DefaultFeedMaxBytes): past it the batch ends, a slice of at most feedSliceRows rows later.
	MaxBytes int64
}

// FeedGroups asks for complete groups.
type FeedGroups struct {
	Column  string        // rows with equal values of this column form a group
	Size    int           // a group is complete once this many distinct keys have its value
	Timeout time.Duration // a group first sealed this long ago goes out incomplete (0: never)
	MaxHeld int           // rows held back at most (default DefaultFeedMaxHeld); past it the oldest groups go out incomplete
}

// FeedBatch is one batch of the feed.
type FeedBatch struct {
	// Rows (nil when the batch is empty): the key and the requested user columns, _seq, _op, and
	// for grouped feeds _complete; a group's rows are adjacent. The caller releases it.
	Rows   arrow.RecordBatch
	Next   FeedCursor // the position after this batch
	Groups int        // grouped feeds: how many groups Rows holds
}

// Release releases the batch's rows.
func (b *FeedBatch) Release() {
	if b.Rows != nil {
		b.Rows.Release()
		b.Rows = nil
	}
}

// FeedExpiredError: the cursor needs a generation that is gone (released past its retention or
// by nobody's hold).
type FeedExpiredError struct {
	Shard      string
	Generation uint64
	// Restart is where a consumer can start again: read the base table at RestartVersion, then
	// the feed from RestartCursor.
	RestartVersion uint64
	RestartCursor  FeedCursor
}

func (e *FeedExpiredError) Error() string {
	return fmt.Sprintf("lsm: the change-feed position needs generation %d of shard %s, which was released; restart from table version %d", e.Generation, e.Shard, e.RestartVersion)
}

// FeedHead is the cursor of the feed's current end: every generation sealed so far.
func (s *Store) FeedHead(ctx context.Context) (FeedCursor, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return FeedCursor{}, err
	}
	c := FeedCursor{shards: map[string]shardPos{}}
	for sh, wm := range snap.Table.WALWatermarks {
		c.shards[sh] = shardPos{gen: wm}
	}
	for _, sh := range snap.Shards {
		m := sh.Manifest
		top := max(c.shards[sh.Shard].gen, m.ReleasedThrough)
		m.ListedGenerations(func(g shard.Generation) { top = max(top, g.Gen) })
		c.shards[sh.Shard] = shardPos{gen: top}
	}
	return c, nil
}

// FeedEarliest is the cursor of the oldest rows the feed still holds: every shard from its
// oldest generation still listed (retained or pending). Rows merged and released before that
// are only in the base table.
func (s *Store) FeedEarliest(ctx context.Context) (FeedCursor, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return FeedCursor{}, err
	}
	c := FeedCursor{shards: map[string]shardPos{}}
	for _, sh := range snap.Shards {
		m := sh.Manifest
		from := max(m.ReleasedThrough, snap.Table.WALWatermarks[sh.Shard])
		first := uint64(0)
		m.ListedGenerations(func(g shard.Generation) {
			if first == 0 {
				first = g.Gen
			}
		})
		if first > 0 {
			from = first - 1
		}
		c.shards[sh.Shard] = shardPos{gen: from}
	}
	return c, nil
}

// FeedLag is how far cur is behind the feed's end: the generations sealed after it, and when
// the oldest of them was sealed (zero when none).
func (s *Store) FeedLag(ctx context.Context, cur FeedCursor) (gens int, oldest time.Time, err error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return 0, time.Time{}, err
	}
	for _, sh := range snap.Shards {
		p := cur.shards[sh.Shard]
		sh.Manifest.ListedGenerations(func(g shard.Generation) {
			if g.Gen > p.gen {
				gens++
				if oldest.IsZero() || g.SealedAt.Before(oldest) {
					oldest = g.SealedAt
				}
			}
		})
	}
	for _, h := range cur.held {
		gens = max(gens, 1)
		if g, ok := findListed(snap, h.shard, h.gen); ok && (oldest.IsZero() || g.SealedAt.Before(oldest)) {
			oldest = g.SealedAt
		}
	}
	return gens, oldest, nil
}

// findListed is generation gen of shard sh as snap's manifests list it.
func findListed(snap *Snapshot, sh string, gen uint64) (shard.Generation, bool) {
	var out shard.Generation
	found := false
	for _, ss := range snap.Shards {
		if ss.Shard == sh {
			ss.Manifest.ListedGenerations(func(g shard.Generation) {
				if g.Gen == gen {
					out, found = g, true
				}
			})
		}
	}
	return out, found
}

// restartPoint is where a consumer whose position expired starts again: the table version snap
// read, and a cursor at its watermarks (every generation above them is pending, so readable).
func restartPoint(snap *Snapshot) (uint64, FeedCursor) {
	c := FeedCursor{shards: map[string]shardPos{}}
	for sh, wm := range snap.Table.WALWatermarks {
		c.shards[sh] = shardPos{gen: wm}
	}
	return snap.Table.Version, c
}

// Changes returns the batch after cur.
func (s *Store) Changes(ctx context.Context, cur FeedCursor, opts FeedOptions) (FeedBatch, error) {
	cols, err := s.columns(opts.Columns)
	if err != nil {
		return FeedBatch{}, err
	}
	names := s.feedNames(cols)
	read := slices.Clone(names)
	if g := opts.Groups; g != nil {
		if g.Column == "" || len(s.schema.FieldIndices(g.Column)) == 0 || g.Column[0] == '_' {
			return FeedBatch{}, fmt.Errorf("%w: no column %q to group by", table.ErrSchema, g.Column)
		}
		if g.Size < 1 {
			return FeedBatch{}, fmt.Errorf("%w: a group size must be at least 1", table.ErrSchema)
		}
		if !slices.Contains(read, g.Column) {
			read = append(read, g.Column)
		}
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultFeedLimit
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultFeedMaxBytes
	}
	opts.Limit = min(opts.Limit, MaxFeedLimit)
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	return readFresh(ctx, s, func() (FeedBatch, error) { return s.changesOnce(ctx, cur, opts, names, read) })
}

// feedRow is a row a batch read: where it is, its version, and what the batch decided.
type feedRow struct {
	at     heldRow
	v      version
	sealed time.Time // its generation's seal time (a group's timeout counts from its first row's)
	part   int       // the gathered slice holding it, and its row there
	row    int
}

// feedGroup is an open group: its rows, oldest first.
type feedGroup struct {
	value string
	rows  []int // indexes into the batch's rows
	keys  map[string]bool
}

// changesOnce builds one batch on one snapshot; errVanished when a generation it read was
// released meanwhile (the next attempt finds the position expired, or reads it all again).
func (s *Store) changesOnce(ctx context.Context, cur FeedCursor, opts FeedOptions, names, read []string) (FeedBatch, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return FeedBatch{}, err
	}
	listed := map[string]map[uint64]shard.Generation{}
	for _, sh := range snap.Shards {
		gens := map[uint64]shard.Generation{}
		sh.Manifest.ListedGenerations(func(g shard.Generation) { gens[g.Gen] = g })
		listed[sh.Shard] = gens
	}
	if err := checkFeedPosition(snap, cur, listed); err != nil {
		return FeedBatch{}, err
	}
	b := &feedBuilder{s: s, opts: opts, names: names, read: read, next: cur.clone(), rowsReader: s.shards.NewRowReader()}
	defer b.release()
	// Rows held back by the previous batch come first: they were read before anything new.
	for _, h := range cur.held {
		g := listed[h.shard][h.gen]
		gv, err := b.view(ctx, h.shard, g)
		if err != nil {
			return FeedBatch{}, err
		}
		if int(h.idx) >= len(gv.keys.Keys) {
			return FeedBatch{}, fmt.Errorf("%w: held row %d of generation %d of shard %s does not exist", ErrBadCursor, h.idx, h.gen, h.shard)
		}
		b.pending = append(b.pending, feedRow{at: h, v: generationVersion(gv, int(h.idx)), sealed: g.SealedAt})
	}
	b.next.held = nil
	if err := b.flushPending(ctx); err != nil {
		return FeedBatch{}, err
	}
	// Then every shard's generations after its position, oldest sealed first.
	queues := map[string][]shard.Generation{}
	for _, sh := range snap.Shards {
		p := cur.shards[sh.Shard]
		var q []shard.Generation
		sh.Manifest.ListedGenerations(func(g shard.Generation) {
			if g.Gen > p.gen {
				q = append(q, g)
			}
		})
		if len(q) > 0 {
			queues[sh.Shard] = q
		}
	}
	for !b.full() && !b.overHeld() && len(queues) > 0 {
		if err := ctx.Err(); err != nil {
			return FeedBatch{}, err
		}
		sh := oldestSealed(queues)
		g := queues[sh][0]
		done, err := b.readGeneration(ctx, sh, g)
		if err != nil {
			return FeedBatch{}, err
		}
		if !done {
			break
		}
		if queues[sh] = queues[sh][1:]; len(queues[sh]) == 0 {
			delete(queues, sh)
		}
	}
	return b.finish(ctx)
}

// checkFeedPosition fails with *FeedExpiredError when cur needs a generation that is gone: the
// next generation of a shard at or below what was merged and is no longer listed, or a held
// row's generation.
func checkFeedPosition(snap *Snapshot, cur FeedCursor, listed map[string]map[uint64]shard.Generation) error {
	expired := func(sh string, gen uint64) error {
		v, c := restartPoint(snap)
		return &FeedExpiredError{Shard: sh, Generation: gen, RestartVersion: v, RestartCursor: c}
	}
	for _, sh := range snap.Shards {
		next := cur.shards[sh.Shard].gen + 1
		gone := max(sh.Manifest.ReleasedThrough, snap.Table.WALWatermarks[sh.Shard])
		if _, ok := listed[sh.Shard][next]; !ok && next <= gone {
			return expired(sh.Shard, next)
		}
	}
	for _, h := range cur.held {
		if _, ok := listed[h.shard][h.gen]; !ok {
			return expired(h.shard, h.gen)
		}
	}
	return nil
}

// oldestSealed is the shard whose next generation was sealed first (ties: the shard's name).
func oldestSealed(queues map[string][]shard.Generation) string {
	best := ""
	for sh, q := range queues {
		if best == "" {
			best = sh
			continue
		}
		b := queues[best][0]
		if c := q[0].SealedAt.Compare(b.SealedAt); c < 0 || (c == 0 && sh < best) {
			best = sh
		}
	}
	return best
}

// feedBuilder accumulates one batch.
type feedBuilder struct {
	s          *Store
	opts       FeedOptions
	names      []string // the columns a batch returns: the key, then the asked user columns
	read       []string // names, and the group column
	next       FeedCursor
	rowsReader *shard.RowReader
	views      map[heldRow]*genView // by shard and generation (idx 0)

	rows    []feedRow           // every row read, in the order read
	pending []feedRow           // read, not yet gathered
	parts   []arrow.RecordBatch // gathered rows (the read columns), slice by slice
	out     []int               // rows delivered, in order
	outDone map[int]bool        // rows in out, with their group's completeness
	groups  map[string]*feedGroup
	open    []*feedGroup // open groups, oldest first
	ngroups int
	held    int
	bytes   int64 // of parts
}

func (b *feedBuilder) release() {
	for _, p := range b.parts {
		p.Release()
	}
	b.parts = nil
	b.rowsReader.Release()
}

// view is the key file of generation g of shard sh, read once per batch.
func (b *feedBuilder) view(ctx context.Context, sh string, g shard.Generation) (*genView, error) {
	id := heldRow{shard: sh, gen: g.Gen}
	if v, ok := b.views[id]; ok {
		return v, nil
	}
	k, err := b.s.shards.KeyFile(ctx, g)
	if err != nil {
		return nil, vanished(err, sh, g)
	}
	if b.views == nil {
		b.views = map[heldRow]*genView{}
	}
	v := &genView{gen: g, shard: sh, keys: k}
	b.views[id] = v
	return v, nil
}

// full reports whether the batch holds its rows, or as many bytes as it may gather.
func (b *feedBuilder) full() bool { return len(b.out) >= b.opts.Limit || b.bytes >= b.opts.MaxBytes }

// overHeld reports whether a grouped batch holds back more rows than it may: it stops reading,
// and finish delivers the oldest groups incomplete.
func (b *feedBuilder) overHeld() bool {
	return b.opts.Groups != nil && (b.held > b.opts.Groups.maxHeld() || b.bytes >= b.opts.MaxBytes)
}

func (g *FeedGroups) maxHeld() int {
	if g.MaxHeld <= 0 {
		return DefaultFeedMaxHeld
	}
	return min(g.MaxHeld, maxCursorHeld)
}

// readGeneration reads generation g of shard sh from the shard's position, a slice at a time,
// until the batch is full; done when it read the generation to its end.
func (b *feedBuilder) readGeneration(ctx context.Context, sh string, g shard.Generation) (done bool, err error) {
	gv, err := b.view(ctx, sh, g)
	if err != nil {
		return false, err
	}
	start := 0
	if p := b.next.shards[sh]; g.Gen == p.gen+1 {
		start = int(p.off)
	}
	n := len(gv.keys.Keys)
	if start > n {
		return false, fmt.Errorf("%w: offset %d past generation %d of shard %s (%d keys)", ErrBadCursor, start, g.Gen, sh, n)
	}
	for i := start; i < n; {
		take := min(n-i, feedSliceRows)
		if b.opts.Groups == nil {
			take = min(take, b.opts.Limit-len(b.out))
		}
		for j := i; j < i+take; j++ {
			b.pending = append(b.pending, feedRow{at: heldRow{shard: sh, gen: g.Gen, idx: uint32(j)}, v: generationVersion(gv, j), sealed: g.SealedAt})
		}
		if err := b.flushPending(ctx); err != nil {
			return false, err
		}
		i += take
		if i == n {
			b.next.shards[sh] = shardPos{gen: g.Gen}
			return true, nil
		}
		b.next.shards[sh] = shardPos{gen: g.Gen - 1, off: uint32(i)}
		if b.full() || b.overHeld() {
			return false, nil
		}
	}
	b.next.shards[sh] = shardPos{gen: g.Gen}
	return true, nil
}

// flushPending gathers the pending rows' columns and decides each: delivered now (ungrouped, a
// delete, a row outside any group, or its group just completed) or held in its open group.
func (b *feedBuilder) flushPending(ctx context.Context) error {
	if len(b.pending) == 0 {
		return nil
	}
	live := make([]version, len(b.pending))
	for i, r := range b.pending {
		live[i] = r.v
	}
	pb := newPageBuilder(b.s, b.read, b.read)
	rec, err := pb.gather(ctx, nil, live, b.rowsReader)
	if err != nil {
		return err
	}
	part := len(b.parts)
	b.parts = append(b.parts, rec)
	b.bytes += appendBytes(rec)
	var groupCol arrow.Array
	if b.opts.Groups != nil {
		groupCol = rec.Column(rec.Schema().FieldIndices(b.opts.Groups.Column)[0])
	}
	for i, r := range b.pending {
		r.part, r.row = part, i
		idx := len(b.rows)
		b.rows = append(b.rows, r)
		if groupCol == nil || r.v.tomb || groupCol.IsNull(i) {
			b.deliver(idx, false)
			continue
		}
		b.addToGroup(idx, groupCol.ValueStr(i))
	}
	b.pending = b.pending[:0]
	return nil
}

// deliver adds row idx to the batch (grouped: whether its group is complete).
func (b *feedBuilder) deliver(idx int, complete bool) {
	if b.outDone == nil {
		b.outDone = map[int]bool{}
	}
	b.out = append(b.out, idx)
	b.outDone[idx] = complete
}

// addToGroup adds row idx to the open group of value, delivering the group once complete.
func (b *feedBuilder) addToGroup(idx int, value string) {
	if b.groups == nil {
		b.groups = map[string]*feedGroup{}
	}
	g := b.groups[value]
	if g == nil {
		g = &feedGroup{value: value, keys: map[string]bool{}}
		b.groups[value] = g
		b.open = append(b.open, g)
	}
	g.rows = append(g.rows, idx)
	g.keys[b.rows[idx].v.key] = true
	b.held++
	if len(g.keys) >= b.opts.Groups.Size {
		b.closeGroup(g, true)
	}
}

// closeGroup delivers an open group's rows, whole.
func (b *feedBuilder) closeGroup(g *feedGroup, complete bool) {
	for _, idx := range g.rows {
		b.deliver(idx, complete)
	}
	b.held -= len(g.rows)
	b.ngroups++
	delete(b.groups, g.value)
	b.open = slices.DeleteFunc(b.open, func(o *feedGroup) bool { return o == g })
}

// finish delivers the groups that timed out (while the batch has room) and, past MaxHeld, the
// oldest open groups incomplete; records what stays held in the cursor; and builds the rows.
func (b *feedBuilder) finish(ctx context.Context) (FeedBatch, error) {
	if g := b.opts.Groups; g != nil {
		maxHeld := g.maxHeld()
		for _, o := range slices.Clone(b.open) {
			first := b.rows[o.rows[0]].sealed
			if b.full() || g.Timeout <= 0 || b.opts.Now.Sub(first) < g.Timeout {
				continue
			}
			b.closeGroup(o, false)
		}
		for (b.held > maxHeld || (b.bytes >= b.opts.MaxBytes && len(b.out) == 0)) && len(b.open) > 0 {
			b.closeGroup(b.open[0], false)
		}
		for _, o := range b.open {
			for _, idx := range o.rows {
				b.next.held = append(b.next.held, b.rows[idx].at)
			}
		}
	}
	batch := FeedBatch{Next: b.next, Groups: b.ngroups}
	if len(b.out) == 0 {
		return batch, nil
	}
	rec, err := b.build(ctx)
	if err != nil {
		return FeedBatch{}, err
	}
	batch.Rows = rec
	return batch, nil
}

// build assembles the delivered rows: one version per key (the newest), the read columns
// projected to the key and the asked columns, then _seq, _op and (grouped) _complete.
func (b *feedBuilder) build(ctx context.Context) (arrow.RecordBatch, error) {
	newest := map[string]int{} // key -> its newest delivered row
	for _, idx := range b.out {
		r := b.rows[idx]
		if cur, ok := newest[r.v.key]; !ok || r.v.seq > b.rows[cur].v.seq {
			newest[r.v.key] = idx
		}
	}
	starts := make([]int64, len(b.parts))
	var total int64
	for i, p := range b.parts {
		starts[i] = total
		total += p.NumRows()
	}
	var take []int64
	var kept []int
	for _, idx := range b.out {
		r := b.rows[idx]
		if newest[r.v.key] != idx {
			continue
		}
		take = append(take, starts[r.part]+int64(r.row))
		kept = append(kept, idx)
	}
	all, err := arrowutil.TakeParts(ctx, b.s.mem, b.parts, take)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	proj, err := project(all, b.names)
	if err != nil {
		return nil, err
	}
	defer proj.Release()
	seqs := array.NewUint64Builder(b.s.mem)
	defer seqs.Release()
	ops := array.NewStringBuilder(b.s.mem)
	defer ops.Release()
	complete := array.NewBooleanBuilder(b.s.mem)
	defer complete.Release()
	for _, idx := range kept {
		r := b.rows[idx]
		seqs.Append(r.v.seq)
		if r.v.tomb {
			ops.Append(FeedOpDelete)
		} else {
			ops.Append(FeedOpUpsert)
		}
		if c, grouped := b.outDone[idx], b.isGrouped(idx); grouped {
			complete.Append(c)
		} else {
			complete.AppendNull()
		}
	}
	cols := append(slices.Clone(proj.Columns()), seqs.NewArray(), ops.NewArray())
	if b.opts.Groups != nil {
		cols = append(cols, complete.NewArray())
	}
	defer func() {
		for _, c := range cols[len(proj.Columns()):] {
			c.Release()
		}
	}()
	return array.NewRecordBatch(b.s.feedSchema(b.names, b.opts.Groups != nil), cols, int64(len(kept))), nil
}

// FeedSchema is the schema of a feed batch's rows for opts (what an empty batch would have).
func (s *Store) FeedSchema(opts FeedOptions) (*arrow.Schema, error) {
	cols, err := s.columns(opts.Columns)
	if err != nil {
		return nil, err
	}
	return s.feedSchema(s.feedNames(cols), opts.Groups != nil), nil
}

// feedNames are the user columns a batch returns: the key, then cols.
func (s *Store) feedNames(cols []string) []string {
	names := []string{s.keyColumn}
	for _, c := range cols {
		if c != s.keyColumn {
			names = append(names, c)
		}
	}
	return names
}

func (s *Store) feedSchema(names []string, grouped bool) *arrow.Schema {
	fields := make([]arrow.Field, 0, len(names)+3)
	for _, n := range names {
		fields = append(fields, s.schema.Field(s.schema.FieldIndices(n)[0]))
	}
	fields = append(fields,
		arrow.Field{Name: table.SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: FeedOpColumn, Type: arrow.BinaryTypes.String})
	if grouped {
		fields = append(fields, arrow.Field{Name: FeedCompleteColumn, Type: arrow.FixedWidthTypes.Boolean, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

// isGrouped reports whether delivered row idx went out as part of a group (not a delete or a row
// without a group value).
func (b *feedBuilder) isGrouped(idx int) bool {
	if b.opts.Groups == nil || b.rows[idx].v.tomb {
		return false
	}
	rec := b.parts[b.rows[idx].part]
	return !rec.Column(rec.Schema().FieldIndices(b.opts.Groups.Column)[0]).IsNull(b.rows[idx].row)
}
