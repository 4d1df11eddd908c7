// Holds: what a store's change-feed consumers and read tokens still need, as the catalog records
// them (catalog.Holds: committed cursors and cuts), turned into what the store's merges and
// cleanups keep: merged generations above each shard's floor (lsm.Holds) and the table versions
// the cuts read.
package storecache

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/lsm"
)

// StoreHolds reads what holds the store: consumers that committed within retainFor, and live
// read tokens. keepVersions are the table versions the tokens' cuts read. A cursor or cut that
// does not decode is an error (never "holds nothing").
func StoreHolds(ctx context.Context, cat *catalog.Catalog, kind catalog.Kind, name string, retainFor time.Duration) (h lsm.Holds, keepVersions []uint64, err error) {
	raw, err := cat.Holds(ctx, kind, name, time.Now().Add(-retainFor))
	if err != nil {
		return lsm.Holds{}, nil, err
	}
	return holdsOf(raw)
}

// holdsOf combines the holders: consumers' cursors into per-shard floors (the lowest of any; a
// shard a cursor does not name is needed from its first generation, floor 0), read tokens' cuts
// into pinned floors for the shards each reads.
func holdsOf(raw catalog.StoreHolds) (lsm.Holds, []uint64, error) {
	h := lsm.Holds{Consumers: len(raw.Cursors) > 0, Floors: map[string]uint64{}, Pinned: map[string]uint64{}}
	var keep []uint64
	for _, r := range raw.Cuts {
		var cut lsm.Cut
		if err := json.Unmarshal(r, &cut); err != nil {
			return lsm.Holds{}, nil, fmt.Errorf("a read token's cut: %w", err)
		}
		keep = append(keep, cut.TableVersion)
		for sh, floor := range cut.Pins() {
			if cur, ok := h.Pinned[sh]; !ok || floor < cur {
				h.Pinned[sh] = floor
			}
		}
	}
	consumers := make([]map[string]uint64, 0, len(raw.Cursors))
	for _, s := range raw.Cursors {
		c, err := lsm.ParseFeedCursor(s)
		if err != nil {
			return lsm.Holds{}, nil, fmt.Errorf("a consumer's committed cursor: %w", err)
		}
		consumers = append(consumers, c.Floors())
	}
	for _, floors := range consumers {
		for sh := range floors {
			h.Floors[sh] = floors[sh]
		}
	}
	for _, floors := range consumers {
		for sh := range h.Floors {
			h.Floors[sh] = min(h.Floors[sh], floors[sh]) // 0 when the cursor does not name the shard
		}
	}
	return h, keep, nil
}
