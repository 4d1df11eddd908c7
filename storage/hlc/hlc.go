// Package hlc is the hybrid logical clock that stamps every row's _seq: the high 48 bits are
// wall-clock milliseconds, the low 16 bits a counter, so sequence numbers are close to real time
// yet strictly increasing per process even if the wall clock stalls or steps back. Observe moves
// the clock past any _seq seen elsewhere (a store's max _seq on open), so a process never issues
// a _seq older than one the store already holds.
package hlc

import (
	"sync"
	"time"
)

const logicalBits = 16

// Clock issues strictly increasing sequence numbers. The zero value uses time.Now.
type Clock struct {
	mu   sync.Mutex // guards last
	last uint64
	now  func() time.Time
}

// New returns a clock reading wall time from now (time.Now when nil).
func New(now func() time.Time) *Clock { return &Clock{now: now} }

func (c *Clock) physical() uint64 {
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	return uint64(now().UnixMilli()) << logicalBits
}

// Next returns a sequence number greater than every one returned or observed before.
func (c *Clock) Next() uint64 { return c.NextN(1) }

// NextN reserves n consecutive sequence numbers and returns the first.
func (c *Clock) NextN(n int) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := max(c.physical(), c.last+1)
	c.last = first + uint64(n) - 1
	return first
}

// Observe makes every later Next return more than seq.
func (c *Clock) Observe(seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last, seq)
}

// Time returns the wall-clock part of a sequence number.
func Time(seq uint64) time.Time { return time.UnixMilli(int64(seq >> logicalBits)) }
