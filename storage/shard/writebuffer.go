// The process-wide bound on unsealed rows (a write-buffer manager). Each store's writer seals by
// its own size (SealRows/SealBytes), but spread over a thousand resident stores those thresholds
// are never reached and unsealed rows would grow with the number of stores. The WriteBuffer counts
// the memtable bytes of every writer in the process; past its limit its sealer seals the largest
// memtables first until usage is back under a low watermark, and past a stall threshold appends
// wait (bounded) for room, then fail with ErrOverloaded (503 + Retry-After), rather than grow.
package shard

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// WriteBuffer thresholds, as fractions of the limit.
const (
	writeBufferLowWater = 0.75 // the sealer stops once usage is at or below this
	WriteBufferStall    = 1.25 // appends wait while usage is at or above this
	// writeBufferMaxWait bounds how long an append waits for room before ErrOverloaded.
	writeBufferMaxWait = 5 * time.Second
	// writeBufferSealers is how many seals the write buffer runs at once.
	writeBufferSealers = 8
)

// WriteBuffer bounds the unsealed bytes of every writer in the process. Create one per process
// (NewWriteBuffer), pass it in Options.WriteBuffer to every store, Close it after the stores.
// A nil *WriteBuffer is unlimited.
type WriteBuffer struct {
	limit     int64
	ioTimeout time.Duration
	maxWait   time.Duration // how long an append waits for room (writeBufferMaxWait)
	used      atomic.Int64

	mu       sync.Mutex           // guards writers, inflight, waiting and room
	writers  map[*Writer]struct{} // every live writer (registered at claim, removed at close)
	inflight int64                // bytes of admitted appends not yet in a memtable
	waiting  int                  // appends waiting for room
	room     chan struct{}        // closed and replaced when usage drops and appends wait

	kick chan struct{} // nudges the sealer; never closed
	quit chan struct{} // closed by Close
	done chan struct{} // closed when the sealer has exited

	seals    prometheus.Counter
	stalls   prometheus.Counter
	refusals prometheus.Counter
}

// NewWriteBuffer starts a write buffer of limit bytes (<= 0: nil, unlimited) whose sealer gives
// each seal ioTimeout. Its metrics are registered with reg (when not nil).
func NewWriteBuffer(limit int64, ioTimeout time.Duration, reg prometheus.Registerer) *WriteBuffer {
	if limit <= 0 {
		return nil
	}
	if ioTimeout <= 0 {
		ioTimeout = 60 * time.Second
	}
	b := &WriteBuffer{limit: limit, ioTimeout: ioTimeout, maxWait: writeBufferMaxWait, writers: map[*Writer]struct{}{}, room: make(chan struct{}),
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		seals:    prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_write_buffer_seals_total", Help: "Memtables sealed because unsealed bytes across the process passed the write buffer limit."}),
		stalls:   prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_write_buffer_stalls_total", Help: "Appends that waited for the write buffer to make room."}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_wal_write_buffer_refusals_total", Help: "Appends refused (503) because the write buffer stayed full."}),
	}
	if reg != nil {
		reg.MustRegister(b.seals, b.stalls, b.refusals,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_wal_unsealed_bytes", Help: "Bytes of unsealed rows held in memtables across the process."},
				func() float64 { return float64(b.used.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_wal_write_buffer_limit_bytes", Help: "The write buffer limit on unsealed bytes."},
				func() float64 { return float64(b.limit) }))
	}
	go b.sealer()
	return b
}

// Used is the unsealed bytes counted across the process's writers, plus appends admitted and
// not yet in a memtable (0 for the nil, unlimited buffer, which counts nothing).
func (b *WriteBuffer) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// SetMaxWait sets how long an append waits for room before failing with ErrOverloaded
// (default writeBufferMaxWait). Call it before the buffer is used.
func (b *WriteBuffer) SetMaxWait(d time.Duration) { b.maxWait = d }

// Close stops the sealer and waits for it.
func (b *WriteBuffer) Close() {
	if b == nil {
		return
	}
	close(b.quit)
	<-b.done
}

func (b *WriteBuffer) register(w *Writer) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.writers[w] = struct{}{}
	b.mu.Unlock()
}

func (b *WriteBuffer) unregister(w *Writer) {
	if b == nil {
		return
	}
	b.mu.Lock()
	delete(b.writers, w)
	b.mu.Unlock()
}

// grow counts n more unsealed bytes and wakes the sealer past the limit.
func (b *WriteBuffer) grow(n int64) {
	if b == nil || n == 0 {
		return
	}
	if b.used.Add(n) > b.limit {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

// shrink counts n fewer unsealed bytes and wakes appends waiting for room.
func (b *WriteBuffer) shrink(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.used.Add(-n)
	b.wake()
}

// wake lets the appends waiting for room look again.
func (b *WriteBuffer) wake() {
	b.mu.Lock()
	if b.waiting > 0 {
		close(b.room)
		b.room = make(chan struct{})
	}
	b.mu.Unlock()
}

// Admit reserves room for an append of about n bytes: at once while unsealed bytes plus the
// appends admitted before stay under the stall threshold (or when nothing else is admitted and
// usage is under it: a lone append larger than the room left still goes), else waiting at most
// writeBufferMaxWait (or until ctx ends), then failing with ErrOverloaded. Reserving, rather
// than checking, keeps concurrent appenders from all passing the check at once. The caller calls
// release once the append is in a memtable or has failed.
func (b *WriteBuffer) Admit(ctx context.Context, n int64) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	stall := int64(float64(b.limit) * WriteBufferStall)
	release = func() {
		b.mu.Lock()
		b.inflight -= n
		b.mu.Unlock()
		b.wake()
	}
	var timer *time.Timer
	for {
		b.mu.Lock()
		used := b.used.Load()
		if used+b.inflight+n <= stall || (b.inflight == 0 && used < stall) {
			b.inflight += n
			b.mu.Unlock()
			return release, nil
		}
		b.waiting++
		room := b.room
		b.mu.Unlock()
		if timer == nil {
			b.stalls.Inc()
			timer = time.NewTimer(b.maxWait)
			defer timer.Stop()
		}
		select {
		case b.kick <- struct{}{}:
		default:
		}
		var err error
		select {
		case <-room:
		case <-timer.C:
			b.refusals.Inc()
			err = fmt.Errorf("%w: unsealed rows fill this worker's write buffer (%d of %d bytes) and sealing has not caught up", ErrOverloaded, b.used.Load(), b.limit)
		case <-ctx.Done():
			err = ctx.Err()
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// sealer seals the largest memtables while usage is over the limit, down to the low watermark.
// Writers whose seal fails are skipped until the next kick, so a failing store cannot spin it.
func (b *WriteBuffer) sealer() {
	defer close(b.done)
	low := int64(float64(b.limit) * writeBufferLowWater)
	for {
		select {
		case <-b.quit:
			return
		case <-b.kick:
		}
		if b.used.Load() <= b.limit {
			continue
		}
		// Seals run writeBufferSealers at a time (each is a key file and a manifest commit: a
		// thousand small memtables sealed one by one would take seconds).
		sem := make(chan struct{}, writeBufferSealers)
		var wg sync.WaitGroup
		for _, w := range b.largestFirst() {
			if b.used.Load() <= low {
				break
			}
			select {
			case <-b.quit:
			case sem <- struct{}{}:
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					ctx, cancel := context.WithTimeout(context.Background(), b.ioTimeout)
					defer cancel()
					if err := w.Seal(ctx); err != nil {
						slog.Warn("shard: write buffer seal failed", "store", w.a.Name, "shard", w.shard, "err", err)
						return
					}
					b.seals.Inc()
				}()
				continue
			}
			break
		}
		wg.Wait()
	}
}

// largestFirst lists the writers holding unsealed bytes, most first.
func (b *WriteBuffer) largestFirst() []*Writer {
	type sized struct {
		w     *Writer
		bytes int64
	}
	b.mu.Lock()
	all := make([]sized, 0, len(b.writers))
	for w := range b.writers {
		all = append(all, sized{w: w})
	}
	b.mu.Unlock()
	for i := range all {
		all[i].bytes = all[i].w.unsealedBytes()
	}
	slices.SortFunc(all, func(a, c sized) int { return cmp.Compare(c.bytes, a.bytes) })
	out := make([]*Writer, 0, len(all))
	for _, s := range all {
		if s.bytes > 0 {
			out = append(out, s.w)
		}
	}
	return out
}
