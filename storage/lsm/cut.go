// Cuts: a store's state at one moment, named by numbers so that it can be read again later on any
// worker (read tokens). A cut is a base-table version and, per shard, the newest generation sealed
// then; reading it sees the table at that version overridden by every generation above the
// version's watermark up to the cut's (pending then, merged and retained since), and no memtable.
// Whoever hands out a cut keeps its table version from version cleanup and its generations from
// release (Holds, retention.go) until it expires.
package lsm

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/strata-store/strata/storage/shard"
)

// Cut is a store's state at one moment.
type Cut struct {
	TableVersion uint64 `json:"table_version"`
	// Generations: per shard, the newest generation sealed at the cut (shards with none sealed
	// above the table's watermark are absent).
	Generations map[string]uint64 `json:"generations,omitempty"`
	// Floors: per shard, the table version's watermark: the cut reads that shard's generations
	// above it (the holds it needs).
	Floors map[string]uint64 `json:"floors,omitempty"`
}

// Pins returns what the cut holds: per shard it reads, the newest generation it does not need
// (every generation above it, up to the cut's, it reads).
func (c Cut) Pins() map[string]uint64 {
	out := make(map[string]uint64, len(c.Generations))
	for sh := range c.Generations {
		out[sh] = c.Floors[sh]
	}
	return out
}

// ErrCutExpired: a generation or the table version a cut reads is gone.
var ErrCutExpired = errors.New("lsm: the cut's versions were released")

// CurrentCut is the store's state now: the latest table version and every generation sealed.
func (s *Store) CurrentCut(ctx context.Context) (Cut, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return Cut{}, err
	}
	c := Cut{TableVersion: snap.Table.Version, Floors: maps.Clone(snap.Table.WALWatermarks)}
	for _, sh := range snap.Shards {
		if n := len(sh.Generations); n > 0 {
			if c.Generations == nil {
				c.Generations = map[string]uint64{}
			}
			c.Generations[sh.Shard] = sh.Generations[n-1].Gen
		}
	}
	return c, nil
}

// snapshotOfCut is the snapshot a cut reads: its table version and, per shard, the generations
// between the version's watermark and the cut's, every one of which must still be listed.
func (s *Store) snapshotOfCut(ctx context.Context, c *Cut) (*Snapshot, error) {
	m, err := s.tbl.Version(ctx, c.TableVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: table version %d: %w", ErrCutExpired, c.TableVersion, err)
	}
	snap := &Snapshot{Table: m}
	var shards []string
	for sh, top := range c.Generations {
		if top > m.WALWatermarks[sh] {
			shards = append(shards, sh)
		}
	}
	manifests, err := s.shardManifests(ctx, shards, nil) // concurrently, as a snapshot reads them
	if err != nil {
		return nil, err
	}
	for i, sh := range shards {
		floor, top, man := m.WALWatermarks[sh], c.Generations[sh], manifests[i]
		if man == nil {
			return nil, fmt.Errorf("%w: shard %s has no manifest", ErrCutExpired, sh)
		}
		var gens []shard.Generation
		man.ListedGenerations(func(g shard.Generation) {
			if g.Gen > floor && g.Gen <= top {
				gens = append(gens, g)
			}
		})
		if uint64(len(gens)) != top-floor || gens[0].Gen != floor+1 {
			return nil, fmt.Errorf("%w: generations %d..%d of shard %s", ErrCutExpired, floor+1, top, sh)
		}
		snap.Shards = append(snap.Shards, ShardSnapshot{Shard: sh, Manifest: man, Generations: gens})
	}
	return snap, nil
}

// readPoint is what a read reads: the live view, a checkout of a table version, or a cut.
type readPoint struct {
	version uint64
	cut     *Cut
}

// live reports whether the read sees this process's memtable (only the live view does).
func (p readPoint) live() bool { return p.version == 0 && p.cut == nil }

// snapshotAt is the snapshot of a read point.
func (s *Store) snapshotAt(ctx context.Context, p readPoint) (*Snapshot, error) {
	if p.cut != nil {
		return s.snapshotOfCut(ctx, p.cut)
	}
	return s.SnapshotAt(ctx, p.version)
}
