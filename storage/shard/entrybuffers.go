// Reused buffers for WAL entries being written. An append's encoding and a group's spliced entry
// live only until the group's entry object or frame is written (object stores copy what they are
// given: they never keep the slice), so the writer hands them back afterwards and the next
// groups reuse them instead of allocating (and zeroing) about an entry's size per append and per
// group. Buffers larger than maxPooledEntryBuffer are left to the garbage collector.
package shard

import "sync"

const maxPooledEntryBuffer = 4 << 20

var entryBuffers sync.Pool // of *[]byte, each with len 0

// entryBuffer returns an empty buffer with at least size bytes of capacity.
func entryBuffer(size int) []byte {
	if p, ok := entryBuffers.Get().(*[]byte); ok {
		if cap(*p) >= size {
			return (*p)[:0]
		}
		entryBuffers.Put(p)
	}
	return make([]byte, 0, size)
}

// releaseEntryBuffer hands b back; the caller must not use it afterwards.
func releaseEntryBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledEntryBuffer {
		return
	}
	b = b[:0]
	entryBuffers.Put(&b)
}
