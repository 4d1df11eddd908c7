// Changes: which keys were written since a reader last looked, for readers that keep state
// derived from a store (datagen's overview) and bring it up to date incrementally instead of
// re-reading the store.
package lsm

import (
	"context"
	"errors"
	"maps"
)

// Position is how far a reader has seen a store's writes: for each shard, the newest sealed
// generation seen (merged ones included). The zero value has seen nothing.
type Position struct {
	gens map[string]uint64 // shard -> every generation up to this one is seen
}

// ChangedKeys returns the keys of the rows (tombstones included) sealed after since, in no
// particular order and possibly repeated, and the position they bring the reader to. Rows still
// in a memtable are not included: they become changes when sealed.
//
// complete is false when the changes cannot be listed: a merge took generations since had not
// seen, or one was merged away while being listed. The reader must then re-read what it derives
// from the store; next counts everything sealed up to a snapshot taken before ChangedKeys
// returned, so a read started after it sees all of that.
func (s *Store) ChangedKeys(ctx context.Context, since Position) (keys []string, next Position, complete bool, err error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, Position{}, false, err
	}
	next = positionOf(snap, since)
	for sh, wm := range snap.Table.WALWatermarks {
		if wm > since.gens[sh] {
			return nil, next, false, nil // merged before this reader saw it
		}
	}
	for _, sh := range snap.Shards {
		for _, g := range sh.Generations {
			if g.Gen <= since.gens[sh.Shard] {
				continue
			}
			k, err := s.GenerationKeys(ctx, sh.Shard, g)
			if errors.Is(err, ErrVanished) {
				return nil, next, false, nil // merged away meanwhile
			}
			if err != nil {
				return nil, Position{}, false, err
			}
			keys = append(keys, k...)
		}
	}
	return keys, next, true, nil
}

// CurrentPosition is the position of a reader that has seen every write sealed up to a snapshot
// taken now (a reader that is about to read the whole store).
func (s *Store) CurrentPosition(ctx context.Context) (Position, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return Position{}, err
	}
	return positionOf(snap, Position{}), nil
}

// positionOf is since moved up to everything snap holds: its table's watermarks and its shards'
// pending generations.
func positionOf(snap *Snapshot, since Position) Position {
	next := Position{gens: maps.Clone(since.gens)}
	if next.gens == nil {
		next.gens = map[string]uint64{}
	}
	for sh, wm := range snap.Table.WALWatermarks {
		next.gens[sh] = max(next.gens[sh], wm)
	}
	for _, sh := range snap.Shards {
		for _, g := range sh.Generations {
			next.gens[sh.Shard] = max(next.gens[sh.Shard], g.Gen)
		}
	}
	return next
}
