// WAL segments: where a writer puts its group commits when the object store can write in place
// (docs/format/memwal.md, "WAL segments"). A segment is a file of frames, appended by the one
// writer whose epoch is in its name; each frame is one group commit's entry (the same Arrow IPC
// stream a WAL entry object holds) with its position, length and checksums, so a reader can
// check any frame it is pointed at and a claim can scan a segment up to its first bad frame.
//
// Frame (little endian):
//
//	"SWF1" | flags u32 (0) | position u64 | payload length u64 | crc32c(payload) u32 |
//	crc32c(the 28 bytes before) u32 | payload
//
// The next frame starts right after the payload.
package shard

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

const (
	frameMagic      = "SWF1"
	FrameHeaderSize = 32
	segmentSuffix   = ".wal"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walLoc says where the entry at a position is: a frame of a segment (Segment is the segment's
// name, Offset the frame's, Length the payload's), or the entry object (Segment empty).
type walLoc struct {
	Segment string
	Offset  int64
	Length  int64
}

// cacheKey names the location for per-read caches.
func (l walLoc) cacheKey(shard string, pos uint64) string {
	if l.Segment == "" {
		return EntryKey(shard, pos)
	}
	return SegmentKey(shard, l.Segment) + "@" + strconv.FormatInt(l.Offset, 10)
}

func SegmentPrefix(shard string) string { return WALDir + shard + "/segments/" }

func SegmentKey(shard, name string) string { return SegmentPrefix(shard) + name }

// SegmentName names the segment that the writer at epoch starts with the frame at position first.
func SegmentName(epoch, first uint64) string {
	return fmt.Sprintf("%020d-%020d%s", epoch, first, segmentSuffix)
}

// ParseSegmentName reads the epoch and first position back from a segment's name.
func ParseSegmentName(name string) (epoch, first uint64, ok bool) {
	name, ok = strings.CutSuffix(name, segmentSuffix)
	if !ok || len(name) != 41 || name[20] != '-' {
		return 0, 0, false
	}
	e, err1 := strconv.ParseUint(name[:20], 10, 64)
	f, err2 := strconv.ParseUint(name[21:], 10, 64)
	return e, f, err1 == nil && err2 == nil
}

// frameSize is the bytes a frame with an n-byte payload takes in its segment.
func frameSize(n int) int64 { return int64(FrameHeaderSize + n) }

// frameHeader returns the header of the frame for position pos whose payload, n bytes with
// crc32c checksum, follows it.
func frameHeader(pos uint64, n int, checksum uint32) []byte {
	b := make([]byte, FrameHeaderSize)
	copy(b, frameMagic)
	binary.LittleEndian.PutUint64(b[8:], pos)
	binary.LittleEndian.PutUint64(b[16:], uint64(n))
	binary.LittleEndian.PutUint32(b[24:], checksum)
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

// decodeFrame checks the frame at the start of b (b may run past it) and returns its position,
// its payload (a sub-slice of b) and the frame's size; ok is false for anything that is not a
// whole, intact frame: zeros, a torn write, a checksum mismatch, a truncated payload.
func decodeFrame(b []byte) (pos uint64, payload []byte, size int64, ok bool) {
	if len(b) < FrameHeaderSize || !bytes.Equal(b[:4], []byte(frameMagic)) ||
		binary.LittleEndian.Uint32(b[4:]) != 0 ||
		binary.LittleEndian.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli) {
		return 0, nil, 0, false
	}
	pos = binary.LittleEndian.Uint64(b[8:])
	n := binary.LittleEndian.Uint64(b[16:])
	if n > uint64(len(b)-FrameHeaderSize) {
		return 0, nil, 0, false
	}
	payload = b[FrameHeaderSize : FrameHeaderSize+int(n)]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[24:]) {
		return 0, nil, 0, false
	}
	return pos, payload, frameSize(int(n)), true
}

// segmentFrame is one intact frame found by scanSegment.
type segmentFrame struct {
	pos     uint64
	offset  int64
	payload []byte // a sub-slice of the scanned bytes
}

// scanSegment returns the frames of a segment's bytes from the start up to the first that is
// not intact (or the end), and the length of that valid prefix.
func scanSegment(data []byte) ([]segmentFrame, int64) {
	var frames []segmentFrame
	var off int64
	for off < int64(len(data)) {
		pos, payload, size, ok := decodeFrame(data[off:])
		if !ok {
			break
		}
		frames = append(frames, segmentFrame{pos: pos, offset: off, payload: payload})
		off += size
	}
	return frames, off
}

// checkFrame returns the payload of b, a frame read from loc, after checking that it is intact
// and holds position pos.
func checkFrame(b []byte, shard string, pos uint64, loc walLoc) ([]byte, error) {
	got, payload, _, ok := decodeFrame(b)
	if !ok || got != pos || int64(len(payload)) != loc.Length {
		return nil, fmt.Errorf("shard: shard %s segment %s has no intact frame for position %d at offset %d",
			shard, loc.Segment, pos, loc.Offset)
	}
	return payload, nil
}
