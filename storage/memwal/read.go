// Reads: the newest _seq of a key across this process's memtables, every shard's pending
// generations and the base table.
//
// Ordering rule: shard manifests are read BEFORE the table manifest. A merge commits the table
// (rows + watermark) before it drops generations from the shard manifest, so whatever a reader
// misses in the shard snapshot is already in the table version it reads next. Generations at or
// below the table's watermark for their shard are already merged and skipped; a generation file
// that vanished after the snapshot (a concurrent merge deleted it) is skipped for the same reason.
package memwal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// ShardSnapshot is one shard's pending (sealed, unmerged) generations, oldest first.
type ShardSnapshot struct {
	Shard       string
	Manifest    *ShardManifest
	Generations []Generation
}

// Snapshot is a consistent view for one read.
type Snapshot struct {
	Shards []ShardSnapshot
	Table  *table.Manifest
}

// PendingGenerations is the total across shards.
func (s *Snapshot) PendingGenerations() int {
	n := 0
	for _, sh := range s.Shards {
		n += len(sh.Generations)
	}
	return n
}

// ListShards returns the ids of every shard that ever wrote to the store.
func (s *Store) ListShards(ctx context.Context) ([]string, error) {
	objs, err := objstore.ListAll(ctx, s.objects, shardsDir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, strings.TrimPrefix(o.Key, shardsDir))
	}
	return out, nil
}

// Snapshot reads every shard's manifest, then the table manifest, and applies the pending
// generation guard rails (ErrOverloaded past ReadMaxGenerations in any shard).
func (s *Store) Snapshot(ctx context.Context) (*Snapshot, error) {
	shards, err := s.ListShards(ctx)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{}
	for _, sh := range shards {
		m, _, err := latestShardManifest(ctx, s.objects, sh, s.manifests)
		if err != nil {
			return nil, err
		}
		if m != nil {
			snap.Shards = append(snap.Shards, ShardSnapshot{Shard: sh, Manifest: m})
		}
	}
	if snap.Table, err = s.tbl.Latest(ctx); err != nil {
		return nil, err
	}
	total := 0
	for i := range snap.Shards {
		sh := &snap.Shards[i]
		wm := snap.Table.WALWatermarks[sh.Shard]
		for _, g := range sh.Manifest.Generations {
			if g.Gen > wm {
				sh.Generations = append(sh.Generations, g)
			} else {
				s.metrics.generationsRejected.Inc()
			}
		}
		n := len(sh.Generations)
		total += n
		if n > s.opts.ReadMaxGenerations {
			s.metrics.readsRefused.Inc()
			return nil, fmt.Errorf("%w: shard %s has %d pending generations (limit %d); a merge must catch up", ErrOverloaded, sh.Shard, n, s.opts.ReadMaxGenerations)
		}
		if n >= s.opts.ReadWarnGenerations && s.warnLimiter.Allow() {
			slog.Warn("memwal: many pending generations; reads slow down until a merge catches up",
				"shard", sh.Shard, "generations", n, "refuse_at", s.opts.ReadMaxGenerations)
		}
	}
	s.metrics.pendingPerRead.Observe(float64(total))
	return snap, nil
}

// source says where a key's newest row lives.
type source struct {
	kind  int // 0 none, 1 memtable, 2 generation, 3 base
	seq   uint64
	tomb  bool
	mem   arrow.RecordBatch // kind 1: the row (retained)
	gen   Generation        // kind 2
	shard string            // kind 2: the generation's shard
	keys  *genKeys          // kind 2: its key file
	row   int               // kind 2: the key's index in the key file
	ref   table.RowRef      // kind 3
}

func (a *source) offer(b source) {
	if b.kind != 0 && (a.kind == 0 || b.seq > a.seq) {
		if a.mem != nil {
			a.mem.Release()
		}
		*a = b
	} else if b.mem != nil {
		b.mem.Release()
	}
}

// SnapshotAt is a read-only checkout of base-table version v: no shard generations and no
// memtable (a checkout excludes the WAL). v = 0 means the live view (Snapshot).
func (s *Store) SnapshotAt(ctx context.Context, v uint64) (*Snapshot, error) {
	if v == 0 {
		return s.Snapshot(ctx)
	}
	m, err := s.tbl.Version(ctx, v)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Table: m}, nil
}

// errVanished: an object of a pending generation the read's snapshot lists was deleted by a merge
// that committed after the snapshot was taken (see the vanishing rule above).
var errVanished = errors.New("memwal: a pending generation was merged during the read")

// vanished maps a miss on a pending generation's object to errVanished; other errors pass.
func vanished(err error) error {
	if errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("%w: %w", errVanished, err)
	}
	return err
}

// maxReadAttempts bounds how often one read starts again on a fresh snapshot. Each attempt after
// the first needs another merge of the same store to commit while the read runs, so the bound is
// reached only under merges back to back; the read then fails as overloaded (retryable).
const maxReadAttempts = 8

// readFresh runs read, starting it again on a fresh snapshot while it reports errVanished.
func readFresh[T any](s *Store, read func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := read()
		if !errors.Is(err, errVanished) {
			return v, err
		}
		if attempt == maxReadAttempts {
			var zero T
			return zero, fmt.Errorf("%w: merges kept replacing the pending generations during the read (%d attempts): %w", ErrOverloaded, attempt, err)
		}
		s.metrics.readsResnapshotted.Inc()
	}
}

// Get returns key's newest live row as a one-row record of the named user columns (all when
// none), or nil when the key does not exist or was deleted. The caller releases the record.
func (s *Store) Get(ctx context.Context, key string, columns []string) (arrow.RecordBatch, error) {
	return s.GetAt(ctx, 0, key, columns)
}

// GetAt is Get against a read-only checkout of base-table version (0 = the live view).
func (s *Store) GetAt(ctx context.Context, version uint64, key string, columns []string) (arrow.RecordBatch, error) {
	names, err := s.columns(columns)
	if err != nil {
		return nil, err
	}
	return readFresh(s, func() (arrow.RecordBatch, error) { return s.getOnce(ctx, version, key, names) })
}

// getOnce is one attempt of GetAt on one snapshot; errVanished when a merge overtook it.
func (s *Store) getOnce(ctx context.Context, version uint64, key string, names []string) (arrow.RecordBatch, error) {
	var best source
	defer func() {
		if best.mem != nil {
			best.mem.Release()
		}
	}()
	if w := s.residentWriter(); w != nil && version == 0 {
		if rec, ref, ok := w.lookup(key); ok {
			best.offer(source{kind: 1, seq: ref.seq, tomb: ref.tomb, mem: rec})
		}
	}
	snap, err := s.SnapshotAt(ctx, version)
	if err != nil {
		return nil, err
	}
	for _, sh := range snap.Shards {
		for i := len(sh.Generations) - 1; i >= 0; i-- {
			g := sh.Generations[i]
			if key < g.MinKey || key > g.MaxKey {
				continue
			}
			k, err := s.keys(ctx, g)
			if err != nil {
				return nil, vanished(err)
			}
			if row, ok := k.find(key); ok {
				best.offer(source{kind: 2, seq: k.seqs[row], tomb: k.tombs[row], gen: g, shard: sh.Shard, keys: k, row: row})
				break // older generations of this shard hold older rows
			}
		}
	}
	stored, err := s.tbl.Lookup(ctx, snap.Table, []string{key})
	if err != nil {
		return nil, err
	}
	if ref, ok := stored[key]; ok {
		best.offer(source{kind: 3, seq: ref.Seq, tomb: ref.Tombstone, ref: ref})
	}
	if best.kind == 0 || best.tomb {
		return nil, nil
	}
	switch best.kind {
	case 1:
		return project(best.mem, names)
	case 2:
		rows := newGenRowReader(s)
		defer rows.release()
		rec, i, err := rows.row(ctx, best.shard, best.gen, best.keys, best.row)
		if err != nil {
			return nil, vanished(err)
		}
		row := rec.NewSlice(int64(i), int64(i)+1)
		defer row.Release()
		return project(row, names)
	}
	return s.tbl.ReadRows(ctx, snap.Table, []table.RowRef{best.ref}, names)
}

// columns validates a projection (user columns only; all of them when empty).
func (s *Store) columns(names []string) ([]string, error) {
	if len(names) == 0 {
		for _, f := range s.schema.Fields() {
			if f.Name != table.SeqColumn && f.Name != table.TombstoneColumn {
				names = append(names, f.Name)
			}
		}
		return names, nil
	}
	for _, n := range names {
		if strings.HasPrefix(n, "_") || len(s.schema.FieldIndices(n)) == 0 {
			return nil, fmt.Errorf("%w: no column %q", table.ErrSchema, n)
		}
	}
	return names, nil
}

// project returns rec's named columns as a new record (retained).
func project(rec arrow.RecordBatch, names []string) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(names))
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		idx := rec.Schema().FieldIndices(n)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%w: no column %q", table.ErrSchema, n)
		}
		cols[i], fields[i] = rec.Column(idx[0]), rec.Schema().Field(idx[0])
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}

// ShardState is a shard's pending work, as reported to the catalog's shard_stats.
type ShardState struct {
	Shard              string
	PendingGenerations int
	PendingRows        int64
	PendingBytes       int64
	OldestPendingAt    *time.Time
}

// OwnShardState describes this process's shard (ok=false when it never wrote to the store).
func (s *Store) OwnShardState(ctx context.Context) (ShardState, bool, error) {
	m, _, err := latestShardManifest(ctx, s.objects, s.Shard(), s.manifests)
	if err != nil || m == nil {
		return ShardState{}, false, err
	}
	st := ShardState{Shard: m.Shard, PendingGenerations: len(m.Generations), PendingRows: m.PendingRows(), PendingBytes: m.PendingBytes()}
	if len(m.Generations) > 0 {
		t := m.Generations[0].SealedAt
		st.OldestPendingAt = &t
	}
	return st, true, nil
}
