// Merges follow seals: when a seal of this process's shard leaves it with at least the merge
// threshold of pending generations, the store's maintenance is asked for a merge at once instead
// of at the next sweep. Requests are deduplicated and rate-limited per store, sent by one
// goroutine from a bounded queue (a full queue drops the request: the sweep remains the safety
// net), and never make a seal wait.
package storecache

import (
	"context"
	"sync"
	"time"

	"github.com/strata-store/strata/catalog"
)

// MergeRequester asks the store's maintenance for a WAL merge (signal-with-start in production).
type MergeRequester func(ctx context.Context, kind catalog.Kind, name string) error

const (
	// mergeRequestInterval: at most one request per store this often (its workflow dedups
	// queued requests anyway; this keeps a hot store from flooding the queue).
	mergeRequestInterval = 5 * time.Second
	mergeTriggerQueue    = 1024
	mergeRequestTimeout  = 5 * time.Second
	// maxTrackedStores: past this many remembered stores, the ones out of their rate-limit
	// window are forgotten (the map stays bounded by the stores sealed within one window).
	maxTrackedStores = 4096
)

type storeKey struct {
	kind catalog.Kind
	name string
}

// mergeTrigger owns the queue and the goroutine that sends merge requests; stop waits for it.
type mergeTrigger struct {
	request   MergeRequester
	threshold int
	queue     chan storeKey
	done      chan struct{}
	stopOnce  sync.Once
	log       func(msg string, args ...any)

	mu      sync.Mutex // guards last and stopped
	last    map[storeKey]time.Time
	stopped bool
}

func newMergeTrigger(request MergeRequester, threshold int, log func(string, ...any)) *mergeTrigger {
	t := &mergeTrigger{request: request, threshold: threshold, queue: make(chan storeKey, mergeTriggerQueue),
		done: make(chan struct{}), log: log, last: map[storeKey]time.Time{}}
	go t.run()
	return t
}

// sealed is the seal hook of store kind/name: it queues a merge request when pending reached the
// threshold and the store was not asked within mergeRequestInterval.
func (t *mergeTrigger) sealed(kind catalog.Kind, name string, pending int) {
	if pending < t.threshold {
		return
	}
	k := storeKey{kind, name}
	t.mu.Lock()
	defer t.mu.Unlock() // held while queueing: stop (which closes the queue) never races a send
	if t.stopped || time.Since(t.last[k]) < mergeRequestInterval {
		return
	}
	if len(t.last) >= maxTrackedStores { // forget stores whose rate limit has passed
		for key, at := range t.last {
			if time.Since(at) >= mergeRequestInterval {
				delete(t.last, key)
			}
		}
	}
	t.last[k] = time.Now()
	select {
	case t.queue <- k:
	default: // full: the sweep will find the store
	}
}

func (t *mergeTrigger) run() {
	defer close(t.done)
	for k := range t.queue {
		ctx, cancel := context.WithTimeout(context.Background(), mergeRequestTimeout)
		if err := t.request(ctx, k.kind, k.name); err != nil {
			t.log("asking for a merge after a seal failed; the sweep will", "store", string(k.kind)+"/"+k.name, "err", err)
		}
		cancel()
	}
}

// stop sends what is queued and waits for the goroutine. Call it after the last seal.
func (t *mergeTrigger) stop() {
	t.stopOnce.Do(func() {
		t.mu.Lock()
		t.stopped = true
		close(t.queue)
		t.mu.Unlock()
	})
	<-t.done
}
