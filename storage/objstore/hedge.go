// Hedged reads: a second request for a small ranged read that is taking longer than most do.
//
// An object store's read latency has a long tail: a request that lands on a busy server or a
// slow disk takes several times the median, and a point get is one or two such reads in a row,
// so its p99 is the store's p99. A hedged read sends the same range request again once the first
// has taken longer than the 95th percentile of the store's recent small reads, answers with
// whichever returns first, then cancels the other and waits for it to end. Both answers are the
// same bytes: only ranged reads are hedged, of objects that never change once written (a
// rewritten key read by range would give either version, as a read racing the rewrite may).
//
// Bounds: only reads of at most hedgeMaxBytes are hedged (a scan's large reads are not); no hedge
// before hedgeMinSamples reads have been timed; at most one read in 1/hedgeRatio sends a second
// request (a token bucket, hedgeBurst deep), so the extra load is bounded whatever the latencies
// do. Wrap only stores where a request is a network round trip (storecache does, for stores that
// do not write in place).
package objstore

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

const (
	hedgeMaxBytes   = 1 << 20                // larger ranged reads are never hedged
	hedgeSamples    = 256                    // recent read latencies kept
	hedgeMinSamples = 64                     // no hedging until this many reads were timed
	hedgeRecompute  = 32                     // the delay is recomputed every this many samples
	hedgeQuantile   = 0.95                   // a read slower than this share of recent ones is hedged
	hedgeRatio      = 0.05                   // at most this share of reads send a second request
	hedgeBurst      = 10                     // hedges that may be sent back to back
	hedgeMinDelay   = 500 * time.Microsecond // a hedge never goes out sooner
	hedgeMaxDelay   = time.Second            // nor later
)

// Hedged wraps a Store so that its small ranged reads are hedged (see the file comment). Every
// other call goes to the wrapped store as it is.
type Hedged struct {
	Store

	mu      sync.Mutex // guards the fields below
	samples [hedgeSamples]time.Duration
	timed   int           // reads timed so far (the ring holds the last hedgeSamples)
	delay   time.Duration // how long a read runs before it is hedged; 0 until hedgeMinSamples
	tokens  float64       // hedges that may be sent now (the budget)

	hedges atomic.Int64 // second requests sent
}

// WithHedgedReads wraps inner.
func WithHedgedReads(inner Store) *Hedged { return &Hedged{Store: inner} }

// Hedges is how many second requests the wrapper has sent.
func (h *Hedged) Hedges() int64 { return h.hedges.Load() }

// plan adds one read's share to the hedge budget and returns the delay after which it may be
// hedged (0: not yet known).
func (h *Hedged) plan() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tokens = min(h.tokens+hedgeRatio, hedgeBurst)
	return h.delay
}

// spend takes one hedge from the budget, if there is one.
func (h *Hedged) spend() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokens < 1 {
		return false
	}
	h.tokens--
	return true
}

// record times one answered read and, every hedgeRecompute reads, recomputes the delay.
func (h *Hedged) record(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples[h.timed%hedgeSamples] = d
	h.timed++
	if h.timed < hedgeMinSamples || h.timed%hedgeRecompute != 0 {
		return
	}
	recent := slices.Clone(h.samples[:min(h.timed, hedgeSamples)])
	slices.Sort(recent)
	h.delay = min(max(recent[int(hedgeQuantile*float64(len(recent)-1))], hedgeMinDelay), hedgeMaxDelay)
}

type rangeResult struct {
	data []byte
	err  error
}

// GetRange reads the range, hedged when it is small (see the file comment). The goroutines it
// starts have ended when it returns.
func (h *Hedged) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if length > hedgeMaxBytes {
		return h.Store.GetRange(ctx, key, offset, length)
	}
	start := time.Now()
	delay := h.plan()
	if delay == 0 {
		data, err := h.Store.GetRange(ctx, key, offset, length)
		if err == nil {
			h.record(time.Since(start))
		}
		return data, err
	}
	rctx, cancel := context.WithCancel(ctx)
	results := make(chan rangeResult, 2)
	var wg sync.WaitGroup
	send := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, err := h.Store.GetRange(rctx, key, offset, length)
			results <- rangeResult{data, err}
		}()
	}
	send()
	timer := time.NewTimer(delay)
	inFlight := 1
	var answer rangeResult
	for answered := false; !answered; {
		select {
		case r := <-results:
			inFlight--
			if r.err != nil && inFlight > 0 {
				continue // the other request may still answer
			}
			answer, answered = r, true
		case <-timer.C:
			if inFlight == 1 && h.spend() {
				h.hedges.Add(1)
				send()
				inFlight++
			}
		}
	}
	timer.Stop()
	cancel()
	wg.Wait()
	if answer.err == nil {
		h.record(time.Since(start))
	}
	return answer.data, answer.err
}
