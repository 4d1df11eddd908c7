package hlc

import (
	"sync"
	"testing"
	"time"
)

func TestNextIsStrictlyIncreasingEvenWhenTheClockStepsBack(t *testing.T) {
	wall := time.UnixMilli(1_000_000)
	c := New(func() time.Time { return wall })
	a := c.Next()
	wall = wall.Add(-time.Hour)
	b := c.Next()
	if b <= a {
		t.Fatalf("%d then %d", a, b)
	}
	first := c.NextN(10)
	if first <= b || c.Next() != first+10 {
		t.Fatal("NextN reserves a contiguous range")
	}
	if got := Time(a); !got.Equal(time.UnixMilli(1_000_000)) {
		t.Fatalf("Time = %v", got)
	}
}

func TestObserveMovesTheClockPastForeignSeqs(t *testing.T) {
	c := New(func() time.Time { return time.UnixMilli(5) })
	far := uint64(time.Now().Add(time.Hour).UnixMilli()) << logicalBits
	c.Observe(far)
	if got := c.Next(); got <= far {
		t.Fatalf("Next %d <= observed %d", got, far)
	}
}

func TestConcurrentNextNeverRepeats(t *testing.T) {
	var c Clock
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				s := c.Next()
				mu.Lock()
				if seen[s] {
					t.Errorf("duplicate %d", s)
				}
				seen[s] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
