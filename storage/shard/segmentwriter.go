// The writer's side of WAL segments: the active segment, frame reservation and retirement.
//
// Ordering: frames are reserved in position order (commit passes a token from group to group,
// see groupCommitter), so within a segment a lower position sits at a lower offset. A claim reads a
// segment up to its first frame that is not intact; therefore a frame may be acknowledged only
// if every frame before it in its segment was written and acknowledged too. The ack chain gives
// the second half (a group is acknowledged after the previous one); the first is the broken
// mark: any group whose frame was reserved but that fails — write, sync, fencing — marks the
// segment broken at its offset, every later frame of the segment fails, and the next group
// starts a new segment.
package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/strata-store/strata/storage/objstore"
)

// ErrEarlierFrameFailed fails a group whose frame lies after a failed one in its segment.
var ErrEarlierFrameFailed = errors.New("shard: an earlier group commit in this WAL segment failed")

// activeSegment is a segment this writer appends to. name, first and file never change; size is
// touched only by the reservation token's holder (ref reads it once the segment is retired, after
// writes.Wait); mu guards broken and frames.
type activeSegment struct {
	name   string
	first  uint64
	file   objstore.ObjectWriter
	size   int64           // the next frame's offset
	frames []reservedFrame // in offset order
	writes sync.WaitGroup  // reserved frames whose group is not finished

	mu     sync.Mutex
	broken int64 // offset of the first frame that failed; -1 while none has
}

type reservedFrame struct {
	pos uint64
	off int64
}

// fail marks the frame at off failed: it and every frame after it do not count.
func (a *activeSegment) fail(off int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.broken < 0 || off < a.broken {
		a.broken = off
	}
}

// failedAtOrBefore reports whether a frame at or before off failed.
func (a *activeSegment) failedAtOrBefore(off int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.broken >= 0 && a.broken <= off
}

// ref describes the segment once no frame is being written: valid up to the first failed frame.
func (a *activeSegment) ref() SegmentRef {
	a.mu.Lock()
	defer a.mu.Unlock()
	ref := SegmentRef{Name: a.name, First: a.first, Length: a.size}
	if a.broken >= 0 {
		ref.Length = a.broken
	}
	for _, f := range a.frames {
		if f.off < ref.Length {
			ref.Last = max(ref.Last, f.pos)
		}
	}
	return ref
}

// reserveFrame places the frame of the group at pos (a payload of n bytes) in the active
// segment, first starting a new segment when there is none, it is broken, the frame would take
// it past SegmentBytes, or it holds rows a seal has made a generation of (see rollBelow: so that
// the sealed rows' segment can be deleted once they are merged, instead of waiting for the size
// roll). Only the reservation token's holder calls it. The caller calls seg.writes.Done() when
// its group is finished.
func (w *Writer) reserveFrame(ctx context.Context, pos uint64, n int) (*activeSegment, int64, error) {
	seg := w.seg
	size := frameSize(n)
	if seg == nil || seg.failedAtOrBefore(seg.size) || (seg.size > 0 && seg.size+size > w.opts.SegmentBytes) ||
		(seg.size > 0 && seg.first < w.rollBelow.Load()) {
		next, err := w.openSegment(ctx, pos)
		if err != nil {
			return nil, 0, err
		}
		if seg != nil {
			w.bg.Add(1)
			go func(old *activeSegment) {
				defer w.bg.Done()
				w.retire(old)
			}(seg)
		}
		w.seg, seg = next, next
	}
	off := seg.size
	seg.size += size
	seg.mu.Lock()
	seg.frames = append(seg.frames, reservedFrame{pos: pos, off: off})
	seg.mu.Unlock()
	seg.writes.Add(1)
	return seg, off, nil
}

// openSegment creates the segment that starts with the frame at pos. Creating it with
// put-if-absent makes its name durable before any frame in it is acknowledged.
func (w *Writer) openSegment(ctx context.Context, pos uint64) (*activeSegment, error) {
	name := SegmentName(w.epoch, pos)
	key := SegmentKey(w.shard, name)
	w.mu.Lock()
	w.liveSegments[name] = true // before the file exists: the garbage planner must not take it
	w.mu.Unlock()
	abandon := func() { // a segment that never took a frame: the next sweep deletes it if it exists
		w.mu.Lock()
		delete(w.liveSegments, name)
		w.mu.Unlock()
	}
	if err := w.a.Objects.PutIfAbsent(ctx, key, nil); err != nil {
		abandon()
		return nil, fmt.Errorf("shard: create WAL segment %s: %w", key, err)
	}
	file, err := objstore.OpenWriter(ctx, w.a.Objects, key, objstore.WriterOptions{Direct: true})
	if err != nil {
		abandon()
		return nil, fmt.Errorf("shard: open WAL segment %s: %w", key, err)
	}
	w.a.Metrics.walSegments.Inc()
	return &activeSegment{name: name, first: pos, file: file, broken: -1}, nil
}

// writeFrame writes the group's frame at off and makes it durable. The payload (its pieces, see
// entrydata.go: large column buffers as they lie, no copy) and the header are written
// separately; until the sync, a crash may leave any of them without the others, which a scan
// reads as the end of the segment.
func (w *Writer) writeFrame(ctx context.Context, seg *activeSegment, off int64, pos uint64, data *entryData) error {
	err := data.writePieces(func(p []byte, at int) error {
		return seg.file.WriteAt(ctx, p, off+FrameHeaderSize+int64(at))
	})
	if err == nil {
		err = seg.file.WriteAt(ctx, frameHeader(pos, data.size, data.checksum()), off)
	}
	if err != nil {
		return fmt.Errorf("shard: write WAL segment %s: %w", seg.name, err)
	}
	if err := seg.file.Sync(ctx); err != nil {
		return fmt.Errorf("shard: sync WAL segment %s: %w", seg.name, err)
	}
	return nil
}

// retire closes a segment the writer has moved past, once its last group is finished, and
// queues its ref for the next seal to list in the shard manifest.
func (w *Writer) retire(seg *activeSegment) {
	seg.writes.Wait()
	ref := seg.ref()
	_ = seg.file.Close()
	w.mu.Lock()
	w.retired = append(w.retired, ref)
	w.mu.Unlock()
}
