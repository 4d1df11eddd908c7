// Point reads: a key's newest live row (resolve.go) and the read-side helpers (projection,
// column checks, this process's shard state).
package lsm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
)

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
	return readFresh(ctx, s, func() (arrow.RecordBatch, error) { return s.getOnce(ctx, readPoint{version: version}, key, names) })
}

// GetCut is Get against a cut (cut.go).
func (s *Store) GetCut(ctx context.Context, cut *Cut, key string, columns []string) (arrow.RecordBatch, error) {
	names, err := s.columns(columns)
	if err != nil {
		return nil, err
	}
	return readFresh(ctx, s, func() (arrow.RecordBatch, error) { return s.getOnce(ctx, readPoint{cut: cut}, key, names) })
}

// getOnce is one attempt of GetAt on one snapshot; errVanished when a merge overtook it.
func (s *Store) getOnce(ctx context.Context, at readPoint, key string, names []string) (arrow.RecordBatch, error) {
	var best version
	defer func() {
		if best.src == sourceMemtable {
			best.mem.Rec.Release()
		}
	}()
	offer := func(c version) {
		if c.supersedes(best) {
			if best.src == sourceMemtable {
				best.mem.Rec.Release()
			}
			best = c
		} else if c.src == sourceMemtable {
			c.mem.Rec.Release()
		}
	}
	if w := s.residentWriter(); w != nil && at.live() {
		if row, ok := w.Lookup(key); ok {
			offer(memtableVersion(&row))
		}
	}
	snap, err := s.snapshotAt(ctx, at)
	if err != nil {
		return nil, err
	}
	for _, sh := range snap.Shards {
		for i := len(sh.Generations) - 1; i >= 0; i-- {
			g := sh.Generations[i]
			if key < g.MinKey || key > g.MaxKey {
				continue
			}
			k, err := s.shards.KeyFile(ctx, g)
			if err != nil {
				return nil, vanished(err, sh.Shard, g)
			}
			if row, ok := k.Find(key); ok {
				offer(generationVersion(&genView{gen: g, shard: sh.Shard, keys: k}, row))
				break // older generations of this shard hold older rows
			}
		}
	}
	stored, err := s.tbl.Lookup(ctx, snap.Table, []string{key})
	if err != nil {
		return nil, err
	}
	if ref, ok := stored[key]; ok {
		offer(tableVersion(ref))
	}
	switch {
	case best.src == sourceNone || best.tomb:
		return nil, nil
	case best.src == sourceTable:
		return s.tbl.ReadRows(ctx, snap.Table, []table.RowRef{best.ref()}, names)
	}
	rows := s.shards.NewRowReader()
	defer rows.Release()
	rec, i, err := pendingRow(ctx, best, rows)
	if err != nil {
		return nil, err
	}
	row := rec.NewSlice(int64(i), int64(i)+1)
	defer row.Release()
	return project(row, names)
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
	m, err := s.shards.LatestManifest(ctx, s.Shard())
	if err != nil || m == nil {
		return ShardState{}, false, err
	}
	return pendingState(m.Shard, m.Generations), true, nil
}

// State is the shard's pending work as the snapshot sees it.
func (sh ShardSnapshot) State() ShardState { return pendingState(sh.Shard, sh.Generations) }

// pendingState sums a shard's pending generations (oldest first): the one computation behind
// every shard_stats row.
func pendingState(shardID string, gens []shard.Generation) ShardState {
	st := ShardState{Shard: shardID, PendingGenerations: len(gens)}
	for i, g := range gens {
		st.PendingRows += g.Rows
		st.PendingBytes += g.Bytes
		if i == 0 {
			t := g.SealedAt
			st.OldestPendingAt = &t
		}
	}
	return st
}
