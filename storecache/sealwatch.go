// Seal watch: who is waiting for a store's next seal (change-feed long polls), woken by this
// process's own seals at once and by other workers' through the catalog's seal notifications.
//
// Ownership: RunSealWatch is one goroutine per process (started and stopped by whoever runs the
// manager) that listens for other workers' seals and sends this process's; a seal hook only
// queues (it must not block a seal), and a full queue drops the notification — it is a hint, and
// a waiting poll still looks at its interval.
package storecache

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/strata-store/strata/catalog"
)

// sealWatch holds the waiters of each store and the seals to announce.
type sealWatch struct {
	mu      sync.Mutex               // guards waiters
	waiters map[string]chan struct{} // store key -> closed at its next seal
	out     chan string              // this process's seals to NOTIFY ("kind/name"), bounded
}

func newSealWatch() *sealWatch {
	return &sealWatch{waiters: map[string]chan struct{}{}, out: make(chan string, 1024)}
}

// wait returns a channel closed at the store's next seal (shared by its waiters).
func (w *sealWatch) wait(key string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.waiters[key]
	if !ok {
		ch = make(chan struct{})
		w.waiters[key] = ch
	}
	return ch
}

// wake wakes the store's waiters.
func (w *sealWatch) wake(key string) {
	w.mu.Lock()
	ch, ok := w.waiters[key]
	delete(w.waiters, key)
	w.mu.Unlock()
	if ok {
		close(ch)
	}
}

// sealed is the seal hook's part: wake local waiters, queue the announcement (never blocks).
func (w *sealWatch) sealed(key string) {
	w.wake(key)
	select {
	case w.out <- key:
	default: // a hint: the waiting polls elsewhere look at their interval
	}
}

// WaitSealed returns a channel closed when rows of the store are next sealed by any worker this
// process hears of (its own seals, and other workers' while RunSealWatch runs).
func (m *Manager) WaitSealed(kind catalog.Kind, name string) <-chan struct{} {
	return m.seals.wait(cacheKey(kind, name))
}

// RunSealWatch listens for other workers' seals and announces this process's, until ctx ends
// (reconnecting with backoff when the catalog connection fails).
func (m *Manager) RunSealWatch(ctx context.Context) {
	if m.cat == nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { // announcing: one NOTIFY at a time, in the order sealed
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case key := <-m.seals.out:
				kind, name, _ := strings.Cut(key, "/")
				nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_ = m.cat.NotifySealed(nctx, catalog.Kind(kind), name)
				cancel()
			}
		}
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := m.cat.ListenSealed(ctx, func(kind catalog.Kind, name string) { m.seals.wake(cacheKey(kind, name)) })
		if ctx.Err() != nil {
			return
		}
		m.log.Warn("listening for other workers' seals failed; change-feed long polls fall back to polling until it resumes", "err", err)
		if time.Since(start) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}
