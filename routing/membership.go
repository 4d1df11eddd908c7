// Membership: this worker's heartbeat in the catalog's workers table and its cached view of the
// live workers. Run owns the one goroutine (the caller's): it heartbeats and refreshes the view
// every Interval until its context ends, then removes this worker's row.
package routing

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-store/strata/catalog"
)

// Catalog is the membership's store (a *catalog.Catalog).
type Catalog interface {
	HeartbeatWorker(ctx context.Context, instance, url string) error
	RemoveWorker(ctx context.Context, instance string) error
	LiveWorkers(ctx context.Context, within time.Duration) ([]catalog.Worker, error)
}

// Options configure a Membership.
type Options struct {
	Self     Member        // this worker (its URL is what clients are sent to)
	Interval time.Duration // heartbeat and refresh interval (default 5s)
	FanOut   int           // preferred workers per store (default 2)
	Log      *slog.Logger
}

// Defaults of Options.
const (
	DefaultInterval = 5 * time.Second
	DefaultFanOut   = 2
)

// Membership is safe for concurrent use.
type Membership struct {
	cat  Catalog
	opts Options

	mu   sync.RWMutex // guards live
	live []Member     // by instance; always holds Self
}

// New returns a membership whose view holds only Self until Run's first refresh.
func New(cat Catalog, opts Options) *Membership {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.FanOut <= 0 {
		opts.FanOut = DefaultFanOut
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Membership{cat: cat, opts: opts, live: []Member{opts.Self}}
}

// FanOut is the number of preferred workers per store.
func (m *Membership) FanOut() int { return m.opts.FanOut }

// Self is this worker.
func (m *Membership) Self() Member { return m.opts.Self }

// Live is the current view of the live workers, by instance.
func (m *Membership) Live() []Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.live
}

// Preferred is the store's preferred workers, best first.
func (m *Membership) Preferred(kind, name string) []Member {
	return Rank(StoreKey(kind, name), m.Live(), m.opts.FanOut)
}

// liveWithin: a worker not seen for this many intervals is taken for dead.
const liveWithin = 3

// Run heartbeats and refreshes the view every Interval until ctx ends, then removes this
// worker's row (bounded by a few seconds). Catalog errors are logged once per outage; the last
// view stays in force.
func (m *Membership) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	failing := false
	for {
		if err := m.refresh(ctx); err != nil && ctx.Err() == nil {
			if !failing {
				m.opts.Log.Warn("routing: the catalog did not answer; the last view of the live workers stays", "err", err)
			}
			failing = true
		} else {
			failing = false
		}
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			if err := m.cat.RemoveWorker(rctx, m.opts.Self.Instance); err != nil {
				m.opts.Log.Warn("routing: could not remove this worker from the live set (it ages out)", "err", err)
			}
			cancel()
			return
		case <-t.C:
		}
	}
}

// refresh heartbeats and reloads the view.
func (m *Membership) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Interval)
	defer cancel()
	if err := m.cat.HeartbeatWorker(ctx, m.opts.Self.Instance, m.opts.Self.URL); err != nil {
		return err
	}
	ws, err := m.cat.LiveWorkers(ctx, liveWithin*m.opts.Interval)
	if err != nil {
		return err
	}
	live := make([]Member, 0, len(ws)+1)
	self := false
	for _, w := range ws {
		live = append(live, Member{Instance: w.Instance, URL: w.URL})
		self = self || w.Instance == m.opts.Self.Instance
	}
	if !self {
		live = append(live, m.opts.Self)
	}
	m.mu.Lock()
	m.live = live
	m.mu.Unlock()
	return nil
}
