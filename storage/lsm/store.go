// Store: one store as seen from one process — its base table, every shard's pending generations
// and this process's shard writer (claimed on the first append, or at open when this process
// wrote to the store before). The Store that api/, activities/ and the open-store cache use.
package lsm

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/strata-store/strata/storage/shard"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/time/rate"

	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// Options configure a Store. Clock, Budget and Metrics are process-wide: share them.
type Options struct {
	Instance string // this worker's instance id (default: hostname)
	Name     string // the store's name in logs (kind/name); set per store by whoever opens it
	// OnSeal, when set, is told after each seal of this process's shard that made a generation
	// how many generations the shard has pending merge (e.g. to ask for a merge at once). It must
	// not block.
	OnSeal func(pending int)
	// ReadOnly: this process never appends to the store (a maintenance worker). Opening, reading
	// and merging never claim a write shard, so a maintenance worker that shares an instance id
	// with an API worker cannot fence it; Append and Delete fail with ErrReadOnly.
	ReadOnly  bool
	Allocator memory.Allocator // default memory.DefaultAllocator
	Clock     *hlc.Clock       // default: a new clock (share one per process)
	Budget    *budget.Budget   // merge memory budget (default: unlimited)
	// WriteBuffer bounds unsealed bytes across every store of the process (nil: unlimited).
	WriteBuffer *shard.WriteBuffer
	Metrics     *Metrics // default: unregistered
	Table       table.Options
	Writer      shard.WriterOptions
	IOTimeout   time.Duration // bound on background object-store calls (default 60s)

	// Holds, when set, says which merged generations change-feed consumers and read tokens still
	// need (retention.go); what consumers need is kept for at most RetainFor (default 24h) after
	// its seal. Nil: a merge releases what it merged.
	Holds     func(ctx context.Context) (Holds, error)
	RetainFor time.Duration

	// Read guard rails (a read must consider every pending generation, so an unmerged backlog
	// makes every read slower until it fails): warn past ReadWarnGenerations pending
	// generations in a shard, refuse reads past ReadMaxGenerations, refuse appends once the
	// process's own shard has AppendMaxGenerations pending.
	ReadWarnGenerations  int // default 256
	ReadMaxGenerations   int // default 4096
	AppendMaxGenerations int // default 2048

	// ShardRecheckInterval: how often a read lists every shard's manifests instead of trusting
	// the store's shard heads (snapshot.go) — a backstop for commits that wrote no head (a
	// writer of an earlier release still running during an upgrade). Default 30s.
	ShardRecheckInterval time.Duration
}

// DefaultInstance is the instance id of a process that names none: its host name.
func DefaultInstance() string {
	if h, _ := os.Hostname(); h != "" {
		return h
	}
	return "default"
}

func (o *Options) defaults() {
	if o.Instance == "" {
		o.Instance = DefaultInstance()
	}
	if o.RetainFor <= 0 {
		o.RetainFor = DefaultRetainFor
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.Clock == nil {
		o.Clock = hlc.New(nil)
	}
	if o.Budget == nil {
		o.Budget = budget.New(0, nil)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	if o.Table.Allocator == nil {
		o.Table.Allocator = o.Allocator
	}
	if o.IOTimeout <= 0 {
		o.IOTimeout = 60 * time.Second
	}
	if o.ReadWarnGenerations <= 0 {
		o.ReadWarnGenerations = 256
	}
	if o.ReadMaxGenerations <= 0 {
		o.ReadMaxGenerations = 4096
	}
	if o.AppendMaxGenerations <= 0 {
		o.AppendMaxGenerations = 2048
	}
	if o.ShardRecheckInterval <= 0 {
		o.ShardRecheckInterval = 30 * time.Second
	}
	if o.Table.Cache == nil {
		// Key files and shard manifests share the table's object cache (one per process in
		// production: Options.Table.Cache).
		o.Table.Cache = cache.New(defaultCacheBytes, nil)
	}
}

// Store is a store's write and read path in this process. Safe for concurrent use.
type Store struct {
	objects     objstore.Store
	shards      *shard.Access // every shard's manifests, key files and rows
	tbl         *table.Table
	opts        Options
	mem         memory.Allocator
	clock       *hlc.Clock
	metrics     *Metrics
	schema      *arrow.Schema // the table schema, internal columns included
	keyColumn   string
	warnLimiter *rate.Limiter // at most one "many pending generations" warning a minute
	// pendingCache holds what searches derive from pending generations — their decoded vectors
	// and inverted files (keyed by shard, generation and column) and their keys' base rows (keyed
	// by shard, generation and table version) — all immutable, in the process's object cache.
	pendingCache cache.Namespace
	// shardsRecheckedAt is when a snapshot last listed the store's shards and every shard's
	// manifests (unix ns; snapshot.go): the next is due ShardRecheckInterval later. That
	// snapshot stores headlessShards: the shards it found without heads, sorted.
	shardsRecheckedAt atomic.Int64
	headlessShards    atomic.Pointer[[]string]
	// seenManifests holds the shard manifests the latest snapshot read, by shard (an immutable
	// map, replaced whole): a shard whose highest head is the version seen costs a snapshot one
	// map lookup. Bounded by the store's shards; it goes with the Store.
	seenManifests atomic.Pointer[map[string]*shard.ShardManifest]

	mu     sync.Mutex // guards writer and closed; held across the claim so one process claims once
	writer *shard.Writer
	closed bool
}

// Create makes the store's base table (idempotent for the same schema) and opens the store.
func Create(ctx context.Context, objects objstore.Store, user *arrow.Schema, keyColumn string, opts Options) (*Store, error) {
	opts.defaults()
	if _, err := table.Create(ctx, objects, user, keyColumn, opts.Table); err != nil {
		return nil, err
	}
	return Open(ctx, objects, opts)
}

// Open opens an existing store (table.ErrNotFound when its base table does not exist).
func Open(ctx context.Context, objects objstore.Store, opts Options) (*Store, error) {
	opts.defaults()
	tbl, err := table.Open(ctx, objects, opts.Table)
	if err != nil {
		return nil, err
	}
	m, err := tbl.Latest(ctx)
	if err != nil {
		return nil, err
	}
	opts.Clock.Observe(m.MaxSeq)
	s := &Store{objects: objects, tbl: tbl, opts: opts, mem: opts.Allocator, clock: opts.Clock, metrics: opts.Metrics,
		schema: m.Schema(), keyColumn: m.KeyColumn, pendingCache: opts.Table.Cache.Namespace()}
	s.shards = shard.NewAccess(objects, s.schema, s.keyColumn, s.mem, opts.Table.Cache, opts.Metrics.Shard, opts.IOTimeout)
	s.shards.Name = opts.Name
	s.shards.Deleter = opts.Table.Deleter // the process's one deleter, for the WAL as for the table
	s.warnLimiter = rate.NewLimiter(rate.Every(time.Minute), 1)
	// A writing process that wrote here before (same instance id) takes its shard back at once
	// and replays what it had not sealed, rather than waiting for its next write: the rows it
	// acknowledged before a crash are readable again as soon as the store is opened. Any other
	// writer claims lazily, on its first append; a read-only process never claims.
	if opts.ReadOnly {
		return s, nil
	}
	own, err := s.shards.LatestManifest(ctx, s.Shard())
	if err != nil {
		return nil, err
	}
	if own != nil {
		if _, err := s.ownWriter(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Schema is the store's table schema (internal columns included).
func (s *Store) Schema() *arrow.Schema { return s.schema }

// KeyColumn names the key column.
func (s *Store) KeyColumn() string { return s.keyColumn }

// Shard is this process's shard id in the store.
func (s *Store) Shard() string { return shard.ShardID(s.opts.Instance) }

// ownWriter returns the process's writer, claiming the shard on first use.
func (s *Store) ownWriter(ctx context.Context) (*shard.Writer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.writer != nil {
		return s.writer, nil
	}
	if s.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	w, err := shard.Claim(ctx, s.shards, shard.Config{Shard: s.Shard(), Instance: s.opts.Instance, Clock: s.clock,
		Writer: s.opts.Writer, WriteBuffer: s.opts.WriteBuffer, OnSeal: s.opts.OnSeal})
	if err != nil {
		return nil, err
	}
	s.writer = w
	return w, nil
}

func (s *Store) residentWriter() *shard.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writer
}

// AppendResult reports a durable append.
type AppendResult struct {
	Rows     int
	FirstSeq uint64 // rows got FirstSeq, FirstSeq+1, ... in batch order
}

// Append durably writes rec's rows (user columns; missing nullable columns become null). It
// returns once they are in the WAL; they are visible to reads in this process at once and to
// other processes once sealed.
func (s *Store) Append(ctx context.Context, rec arrow.RecordBatch) (AppendResult, error) {
	if err := shard.ValidateAppend(rec, s.schema, s.keyColumn); err != nil {
		return AppendResult{}, err
	}
	return s.write(ctx, rec, false)
}

// Delete durably writes tombstones for ids (each a non-empty UTF-8 string).
func (s *Store) Delete(ctx context.Context, ids []string) (AppendResult, error) {
	for _, id := range ids {
		if id == "" || !utf8.ValidString(id) {
			return AppendResult{}, fmt.Errorf("%w: a key must be a non-empty UTF-8 string", table.ErrSchema)
		}
	}
	b := array.NewStringBuilder(s.mem)
	b.AppendValues(ids, nil)
	col := b.NewArray()
	b.Release()
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: s.keyColumn, Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{col}, int64(len(ids)))
	defer rec.Release()
	return s.write(ctx, rec, true)
}

func (s *Store) write(ctx context.Context, rec arrow.RecordBatch, tombstone bool) (AppendResult, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return AppendResult{}, fmt.Errorf("%w: nothing to append", table.ErrSchema)
	}
	w, err := s.ownWriter(ctx)
	if err != nil {
		return AppendResult{}, err
	}
	admitted, err := s.opts.WriteBuffer.Admit(ctx, appendBytes(rec))
	if err != nil {
		return AppendResult{}, err
	}
	defer admitted()
	if pending := w.PendingGenerations(); pending >= int64(s.opts.AppendMaxGenerations) {
		s.metrics.appendsRefused.Inc()
		return AppendResult{}, fmt.Errorf("%w: shard %s has %d sealed generations waiting to be merged", ErrOverloaded, w.ShardID(), pending)
	}
	first := s.clock.NextN(n)
	stamped, err := s.stamp(rec, first, tombstone)
	if err != nil {
		return AppendResult{}, err
	}
	defer stamped.Release()
	if err := w.Enqueue(ctx, stamped); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{Rows: n, FirstSeq: first}, nil
}

// appendBytes estimates what rec adds to a memtable: its columns, and _seq and _tombstone.
func appendBytes(rec arrow.RecordBatch) int64 {
	n := 9 * rec.NumRows()
	for _, c := range rec.Columns() {
		n += int64(c.Data().SizeInBytes())
	}
	return n
}

// stamp lays rec out as the table schema with _seq = first.. and _tombstone set. Tombstone rows
// carry only the key: other non-null columns get their type's zero value.
func (s *Store) stamp(rec arrow.RecordBatch, first uint64, tombstone bool) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	seqB := array.NewUint64Builder(s.mem)
	tombB := array.NewBooleanBuilder(s.mem)
	for i := 0; i < n; i++ {
		seqB.Append(first + uint64(i))
		tombB.Append(tombstone)
	}
	seq, tomb := seqB.NewArray(), tombB.NewArray()
	seqB.Release()
	tombB.Release()
	defer seq.Release()
	defer tomb.Release()
	fields := make([]arrow.Field, 0, rec.Schema().NumFields()+2)
	for i := range rec.Schema().NumFields() {
		fields = append(fields, rec.Schema().Field(i))
	}
	fields = append(fields, arrow.Field{Name: table.SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: table.TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean})
	cols := append(append([]arrow.Array{}, rec.Columns()...), seq, tomb)
	if tombstone {
		for _, f := range s.schema.Fields() {
			if f.Nullable || len(rec.Schema().FieldIndices(f.Name)) > 0 || f.Name == table.SeqColumn || f.Name == table.TombstoneColumn {
				continue
			}
			b := array.NewBuilder(s.mem, f.Type)
			for i := 0; i < n; i++ {
				b.AppendEmptyValue()
			}
			zero := b.NewArray()
			b.Release()
			defer zero.Release()
			fields = append(fields, f)
			cols = append(cols, zero)
		}
	}
	with := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
	defer with.Release()
	return table.Align(with, s.schema, s.mem)
}

// Flush seals this process's shard: after it returns, every row this process acknowledged is
// visible to every process. A no-op when this process never wrote to the store.
func (s *Store) Flush(ctx context.Context) error {
	w := s.residentWriter()
	if w == nil {
		return nil
	}
	return w.Seal(ctx)
}

// Close seals and releases the shard writer. The store must not be used afterwards.
func (s *Store) Close(ctx context.Context) error {
	s.mu.Lock()
	w := s.writer
	s.writer, s.closed = nil, true
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Close(ctx)
}

// defaultCacheBytes is the object cache of a store opened without a shared one (tests, tools).
const defaultCacheBytes = 64 << 20

// SealIfDue seals this process's shard when its memtable has held rows for at least maxAge, or
// an earlier seal left frozen memtables behind. The process-wide flush sweeper calls it on its
// interval (one loop for every resident store, never a timer per store). It reports whether it
// sealed.
func (s *Store) SealIfDue(ctx context.Context, maxAge time.Duration) (bool, error) {
	w := s.residentWriter()
	if w == nil {
		return false, nil
	}
	return w.SealIfDue(ctx, maxAge)
}
