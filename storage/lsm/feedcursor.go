// Change-feed cursors: how far a consumer has read a store's change feed, as an opaque string.
//
// A cursor is exact across shards and merges because it is made of per-shard positions, never
// of times or _seq values: for each shard, every generation up to a number has been read, plus
// the first few keys of the next one (a batch may end inside a generation). A generation sealed
// later on any shard has a higher number than any position that shard's entry holds, so it is
// read after the cursor, never skipped; one read before is never read again. Rows a grouped feed
// read but holds back (their group is not complete yet) are listed by their place (shard,
// generation, key index), so they are delivered exactly once too.
//
// Encoding (then base64url without padding): a version byte (1), the number of shards, then per
// shard its name, generation and offset; the number of held rows, then per held row the index of
// its shard in that list, its generation and key index. Integers are uvarints, names are a
// uvarint length and bytes. Decoding bounds every count before allocating.
package lsm

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"
)

// FeedCursor is a position in a store's change feed. The zero value is the feed's beginning
// (every generation still retained or pending).
type FeedCursor struct {
	shards map[string]shardPos
	held   []heldRow // oldest first: the order they are delivered in
}

// shardPos: every generation of the shard at or below gen has been read, and the first off keys
// (in key-file order) of generation gen+1.
type shardPos struct {
	gen uint64
	off uint32
}

// heldRow is a row read but not delivered: key idx of generation gen of shard.
type heldRow struct {
	shard string
	gen   uint64
	idx   uint32
}

// Cursor decoding bounds: a store is written by at most a few thousand shards, and a grouped
// feed holds at most MaxHeld rows (feedMaxHeld).
const (
	cursorVersion      = 1
	maxCursorShards    = 1 << 14
	maxCursorHeld      = 1 << 17
	maxCursorShardName = 256
	// MaxCursorBytes bounds an encoded cursor (held rows take a few bytes each).
	MaxCursorBytes = 1 << 20
)

// ErrBadCursor: a cursor that does not decode (not one this server wrote).
var ErrBadCursor = errors.New("lsm: not a change-feed cursor")

// String encodes the cursor.
func (c FeedCursor) String() string {
	var b []byte
	b = append(b, cursorVersion)
	names := slices.Sorted(maps.Keys(c.shards))
	index := make(map[string]uint64, len(names))
	// Held rows may name a shard without a position of its own: list it with position 0.
	for _, h := range c.held {
		if _, ok := c.shards[h.shard]; !ok {
			if _, listed := index[h.shard]; !listed {
				index[h.shard] = 0 // marks it listed; its index is set below
				names = append(names, h.shard)
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(names)))
	for i, n := range names {
		index[n] = uint64(i)
		p := c.shards[n]
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		b = binary.AppendUvarint(b, p.gen)
		b = binary.AppendUvarint(b, uint64(p.off))
	}
	b = binary.AppendUvarint(b, uint64(len(c.held)))
	for _, h := range c.held {
		b = binary.AppendUvarint(b, index[h.shard])
		b = binary.AppendUvarint(b, h.gen)
		b = binary.AppendUvarint(b, uint64(h.idx))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseFeedCursor decodes a cursor; the empty string is the zero cursor.
func ParseFeedCursor(s string) (FeedCursor, error) {
	if s == "" {
		return FeedCursor{}, nil
	}
	if len(s) > MaxCursorBytes {
		return FeedCursor{}, fmt.Errorf("%w: longer than %d bytes", ErrBadCursor, MaxCursorBytes)
	}
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return FeedCursor{}, fmt.Errorf("%w: %v", ErrBadCursor, err)
	}
	r := bytes.NewReader(data)
	bad := func(what string) (FeedCursor, error) {
		return FeedCursor{}, fmt.Errorf("%w: %s", ErrBadCursor, what)
	}
	if v, err := r.ReadByte(); err != nil || v != cursorVersion {
		return bad("unknown version")
	}
	uv := func(limit uint64) (uint64, bool) {
		v, err := binary.ReadUvarint(r)
		return v, err == nil && v <= limit
	}
	n, ok := uv(maxCursorShards)
	if !ok || n > uint64(r.Len()) {
		return bad("shard count")
	}
	c := FeedCursor{shards: make(map[string]shardPos, n)}
	names := make([]string, 0, n)
	for range n {
		l, ok := uv(maxCursorShardName)
		if !ok || l == 0 || l > uint64(r.Len()) {
			return bad("shard name")
		}
		name := make([]byte, l)
		_, _ = r.Read(name)
		if !utf8.Valid(name) {
			return bad("shard name")
		}
		gen, ok1 := uv(1<<63 - 1)
		off, ok2 := uv(1<<32 - 1)
		if !ok1 || !ok2 {
			return bad("shard position")
		}
		if _, dup := c.shards[string(name)]; dup {
			return bad("shard listed twice")
		}
		c.shards[string(name)] = shardPos{gen: gen, off: uint32(off)}
		names = append(names, string(name))
	}
	h, ok := uv(maxCursorHeld)
	if !ok || h > uint64(r.Len()) {
		return bad("held row count")
	}
	if h > 0 {
		c.held = make([]heldRow, 0, h)
	}
	for range h {
		si, ok1 := uv(uint64(len(names)))
		gen, ok2 := uv(1<<63 - 1)
		idx, ok3 := uv(1<<32 - 1)
		if !ok1 || !ok2 || !ok3 || si >= uint64(len(names)) {
			return bad("held row")
		}
		c.held = append(c.held, heldRow{shard: names[si], gen: gen, idx: uint32(idx)})
	}
	if r.Len() != 0 {
		return bad("trailing bytes")
	}
	return c, nil
}

// Held is how many rows the cursor holds back (read, in groups not yet complete).
func (c FeedCursor) Held() int { return len(c.held) }

// Floors returns, per shard the cursor names, the newest generation it no longer needs: every
// generation above it may still be read through the cursor. A shard the cursor does not name
// needs every generation (floor 0, absent from the map).
func (c FeedCursor) Floors() map[string]uint64 {
	out := make(map[string]uint64, len(c.shards))
	for sh, p := range c.shards {
		out[sh] = p.gen
	}
	for _, h := range c.held {
		out[h.shard] = min(out[h.shard], max(h.gen, 1)-1)
	}
	return out
}

// clone returns a copy the caller may change.
func (c FeedCursor) clone() FeedCursor {
	out := FeedCursor{shards: maps.Clone(c.shards), held: slices.Clone(c.held)}
	if out.shards == nil {
		out.shards = map[string]shardPos{}
	}
	return out
}
