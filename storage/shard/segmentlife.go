// WAL segment lifetime: which segments and frames count, what a claim finds in them, and when a
// segment is garbage (docs/format/memwal.md, "WAL segments").
//
// Validity rules, all decided from the shard manifest:
//   - a listed segment (ShardManifest.Segments) counts up to its Length;
//   - an unlisted segment of an epoch at or above SegmentsClosedBelow belongs to a writer that no
//     claim has closed yet: it counts up to its first frame that is not intact;
//   - an unlisted segment of an epoch below SegmentsClosedBelow was created by a fenced writer
//     after the claim that closed its epoch had listed the segments: nothing in it counts.
//
// A claim lists every segment of an earlier epoch that it found unlisted, with the valid length
// it scanned, and raises SegmentsClosedBelow to its own epoch, before its writer acknowledges
// anything: frames a fenced writer adds afterwards are never read by anyone.
//
// A listed segment is garbage when every position it holds is at or below replay_after and
// inside no pending or retained generation's entry range; the manifest edit that makes it so (a seal, a
// merge dropping generations, a claim) removes it from the list, and the file is deleted after
// that edit commits (gc.go). The active segment of a writer is not listed, so it is never garbage.
package shard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-store/strata/storage/objstore"
)

// dropGarbageSegments removes the listed segments that nothing needs any more (see above) from
// m and returns them.
func (m *ShardManifest) dropGarbageSegments() []SegmentRef {
	var garbage []SegmentRef
	keep := m.Segments[:0:0]
	for _, ref := range m.Segments {
		held := ref.Last > m.ReplayAfter
		m.ListedGenerations(func(g Generation) {
			if ref.Last != 0 && g.EntryBacked() && g.FirstEntry <= ref.Last && g.LastEntry >= ref.First {
				held = true
			}
		})
		if held {
			keep = append(keep, ref)
		} else {
			garbage = append(garbage, ref)
		}
	}
	m.Segments = keep
	return garbage
}

// listSegments adds refs not yet listed in m.
func (m *ShardManifest) listSegments(refs []SegmentRef) {
	for _, ref := range refs {
		if !slices.ContainsFunc(m.Segments, func(r SegmentRef) bool { return r.Name == ref.Name }) {
			m.Segments = append(m.Segments, ref)
		}
	}
}

// segmentKeys returns the object keys of the shard's segments named (names come from manifests
// and listings: one that is not a segment name is skipped, never turned into a path).
func segmentKeys(shard string, names []string) []string {
	var keys []string
	for _, name := range names {
		if _, _, ok := ParseSegmentName(name); ok {
			keys = append(keys, SegmentKey(shard, name))
		}
	}
	return keys
}

func refNames(refs []SegmentRef) []string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Name
	}
	return names
}

// segmentReplay is an intact frame a claim replays.
type segmentReplay struct {
	pos     uint64
	loc     walLoc
	payload []byte
}

// walScan is what a claim found in a shard's segments.
type walScan struct {
	replay []segmentReplay // intact frames above replay_after, by position
	last   uint64          // the highest position of any frame that counts (0: none)
	close  []SegmentRef    // unlisted segments of earlier epochs, as found: the claim lists them
	strays []string        // segments in which nothing counts
}

// scanSegments reads what counts in the shard's segments for a claim holding m (just bumped to
// the claimer's epoch).
func scanSegments(ctx context.Context, a *Access, shard string, m *ShardManifest) (*walScan, error) {
	objs, err := objstore.ListAll(ctx, a.Objects, SegmentPrefix(shard))
	if err != nil {
		return nil, err
	}
	scan := &walScan{}
	add := func(name string, frames []segmentFrame) {
		for _, f := range frames {
			if f.pos > m.ReplayAfter {
				scan.replay = append(scan.replay, segmentReplay{pos: f.pos, payload: f.payload,
					loc: walLoc{Segment: name, Offset: f.offset, Length: int64(len(f.payload))}})
			}
		}
	}
	for _, o := range objs { // in name order: by epoch, then first position
		name := strings.TrimPrefix(o.Key, SegmentPrefix(shard))
		epoch, first, ok := ParseSegmentName(name)
		if !ok {
			continue
		}
		i := slices.IndexFunc(m.Segments, func(r SegmentRef) bool { return r.Name == name })
		switch {
		case i >= 0:
			ref := m.Segments[i]
			scan.last = max(scan.last, ref.Last)
			if ref.Last <= m.ReplayAfter {
				continue
			}
			data, err := a.Objects.GetRange(ctx, o.Key, 0, ref.Length)
			if err != nil {
				return nil, err
			}
			frames, valid := scanSegment(data)
			if valid < ref.Length {
				// Every frame below a listed length was acknowledged: refuse to lose one quietly.
				return nil, fmt.Errorf("shard: shard %s segment %s is damaged: intact frames end at offset %d, %d bytes are listed",
					shard, name, valid, ref.Length)
			}
			add(name, frames)
		case epoch < m.SegmentsClosedBelow:
			scan.strays = append(scan.strays, name)
		case epoch >= m.Epoch:
			// A later claimer's: this claim is about to find itself fenced.
		default:
			data, err := a.Objects.Get(ctx, o.Key)
			if errors.Is(err, objstore.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			frames, length := scanSegment(data)
			ref := SegmentRef{Name: name, First: first, Length: length}
			for _, f := range frames {
				ref.Last = max(ref.Last, f.pos)
			}
			scan.last = max(scan.last, ref.Last)
			scan.close = append(scan.close, ref)
			add(name, frames)
		}
	}
	// Positions are unique among frames that count (a claim starts above every one it found, and
	// what a fenced writer adds later does not count); should two ever meet, the later epoch's
	// frame (scanned later) wins.
	slices.SortStableFunc(scan.replay, func(a, b segmentReplay) int { return cmp.Compare(a.pos, b.pos) })
	unique := scan.replay[:0]
	for i, r := range scan.replay {
		if i+1 < len(scan.replay) && scan.replay[i+1].pos == r.pos {
			continue
		}
		unique = append(unique, r)
	}
	scan.replay = unique
	return scan, nil
}
