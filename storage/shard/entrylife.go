// WAL entry object lifetime (segments: segmentlife.go). Since format 2 an entry holds its rows
// until the generation that references it is merged, so deletion follows one rule: an entry at
// or below the shard's replay_after that no pending generation's entry range holds is garbage
// (planWALGarbage in gc.go applies it to a listing). Seals and merges delete the entries their
// manifest edit just made garbage by position, when the range is narrow (a shard writing
// segments has almost no entry objects, so a wide range is left to a listing).
package shard

// entryKeysIn returns the keys of the shard's WAL entry positions in the inclusive ranges
// (empty ranges, from > to, are skipped), or ok=false when they span more than
// EntryDeletesWithoutListing positions: listing the entries is then cheaper than a delete per
// position (a position with no entry costs one useless delete).
func entryKeysIn(shard string, ranges ...[2]uint64) (keys []string, ok bool) {
	var width uint64
	for _, r := range ranges {
		if r[0] <= r[1] {
			width += r[1] - r[0] + 1
		}
	}
	if width > EntryDeletesWithoutListing {
		return nil, false
	}
	for _, r := range ranges {
		for p := r[0]; p <= r[1] && p != 0; p++ {
			keys = append(keys, EntryKey(shard, p))
		}
	}
	return keys, true
}

// EntryDeletesWithoutListing: wider ranges are left to a listing (see entryKeysIn).
const EntryDeletesWithoutListing = 64
