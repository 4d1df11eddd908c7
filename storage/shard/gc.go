// WAL garbage: every deletion under _wal/<shard>/ is decided by one pure planner
// (planWALGarbage: a shard manifest and a listing in, keys out) and carried out by the shard
// writer's collector, one goroutine per writer that Close stops and waits for.
//
// What is garbage, given the latest manifest m and a listing of the shard's WAL directory:
//   - a manifest version more than keepManifests behind m, and a head below the shard's highest
//     (heads.go; listed apart, under _heads/);
//   - a WAL entry object at or below m.ReplayAfter that no pending or retained generation holds;
//   - a segment not listed in m of an epoch below m.SegmentsClosedBelow (a fenced writer's,
//     created after its epoch was closed: nothing in it counts);
//   - only when the shard's own writer plans (owner != nil), because only it knows what it is in
//     the middle of writing: a generation file (key file, or a format 1 rows file) no generation
//     of m references — a seal that lost its manifest race or crashed between writing the key
//     file and committing, or a merge whose deletion failed — and a segment of the writer's own
//     epoch that is neither listed nor still used by the writer (listed once, then dropped).
//
// Ordering: the owner plans while holding sealMu, so no seal of its own is between writing a
// key file and committing the manifest that references it; a fenced writer's seal cannot commit
// at all (the epoch check), so its key file is garbage whenever it is listed. Segment names are
// registered as live before the segment is created, and leave the live set only once a seal has
// listed them in the manifest.
//
// Operations that make garbage by a manifest edit (seals, merges) delete what they just made
// garbage, by key; the collector's sweep (after a claim, and every walSweepInterval from the
// flush sweeper) lists the directory and deletes whatever the planner names, which includes what
// a failed deletion or a crash left behind.
package shard

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/strata-store/strata/storage/deleter"
	"github.com/strata-store/strata/storage/objstore"
)

// gcOwner is what the shard's own writer knows when it plans: its epoch and the segments it
// still uses (active, being retired, retired but not yet listed by a seal).
type gcOwner struct {
	epoch    uint64
	segments map[string]bool
}

// planWALGarbage returns the keys of listing (objects under the shard's WAL directory) that
// nothing needs given m, the shard's latest manifest (see the rules above). Pure: no I/O.
func planWALGarbage(shard string, m *ShardManifest, listing []objstore.ObjectInfo, owner *gcOwner) []string {
	if m == nil {
		return nil
	}
	referenced := map[string]bool{}
	m.ListedGenerations(func(g Generation) {
		referenced[g.KeysPath] = true
		if g.Path != "" {
			referenced[g.Path] = true
		}
	})
	listed := map[string]bool{}
	for _, ref := range m.Segments {
		listed[ref.Name] = true
	}
	var out []string
	for _, o := range listing {
		key := o.Key
		switch {
		case strings.HasPrefix(key, manifestPrefix(shard)):
			if v, ok := parseNumbered(key, manifestPrefix(shard), ".json"); ok && v+keepManifests < m.Version {
				out = append(out, key)
			}
		case strings.HasPrefix(key, EntryPrefix(shard)):
			p, ok := parseNumbered(key, EntryPrefix(shard), ".arrows")
			if ok && p <= m.ReplayAfter && !m.holdsRows(p) {
				out = append(out, key)
			}
		case strings.HasPrefix(key, GenerationsPrefix(shard)):
			if owner != nil && !referenced[key] {
				out = append(out, key)
			}
		case strings.HasPrefix(key, SegmentPrefix(shard)):
			name := strings.TrimPrefix(key, SegmentPrefix(shard))
			epoch, _, ok := ParseSegmentName(name)
			if !ok || listed[name] {
				continue
			}
			if epoch < m.SegmentsClosedBelow || (owner != nil && epoch == owner.epoch && epoch == m.Epoch && !owner.segments[name]) {
				out = append(out, key)
			}
		}
	}
	return out
}

// walSweepInterval: how often the flush sweeper has a resident writer list its WAL directory
// for garbage (deletions that failed, a merge's in another process that did not finish).
const walSweepInterval = 5 * time.Minute

// collector carries out a writer's WAL deletions on one goroutine, in the order they were
// queued; stop cancels what is running and waits for the goroutine. Deletion errors are logged
// and counted, never returned: whatever is left is found by the next sweep.
type collector struct {
	w      *Writer
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}

	mu        sync.Mutex // guards the fields below
	keys      []string   // queued deletions
	sweep     bool       // a sweep is requested
	closing   bool       // stop was called: carry out the queued deletions, then exit
	lastSweep time.Time
}

func newCollector(w *Writer) *collector {
	ctx, cancel := context.WithCancel(context.Background())
	return &collector{w: w, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// start runs the collector's goroutine (stop waits for it).
func (c *collector) start() { go c.run() }

// stop carries out the deletions already queued (within one I/O timeout; no sweep) and waits for
// the goroutine to exit. What is left is found by the next sweep, by whichever process claims the
// shard next.
func (c *collector) stop() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.nudge()
	timer := time.AfterFunc(c.w.a.IOTimeout, c.cancel)
	defer timer.Stop()
	<-c.done
	c.cancel()
}

// delete queues keys for deletion.
func (c *collector) delete(keys ...string) {
	if len(keys) == 0 {
		return
	}
	c.mu.Lock()
	c.keys = append(c.keys, keys...)
	c.mu.Unlock()
	c.nudge()
}

// requestSweep asks for a sweep of the shard's WAL directory.
func (c *collector) requestSweep() {
	c.mu.Lock()
	c.sweep = true
	c.mu.Unlock()
	c.nudge()
}

// sweepIfDue requests a sweep when the last one is older than walSweepInterval.
func (c *collector) sweepIfDue() {
	c.mu.Lock()
	due := time.Since(c.lastSweep) >= walSweepInterval
	c.mu.Unlock()
	if due {
		c.requestSweep()
	}
}

func (c *collector) nudge() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *collector) run() {
	defer close(c.done)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wake:
		}
		c.mu.Lock()
		keys, sweep, closing := c.keys, c.sweep && !c.closing, c.closing
		c.keys, c.sweep = nil, false
		if sweep {
			c.lastSweep = time.Now()
		}
		c.mu.Unlock()
		c.w.deleteObjects(c.ctx, keys)
		if closing {
			return
		}
		if sweep {
			if err := c.w.SweepGarbage(c.ctx); err != nil && c.ctx.Err() == nil {
				slog.Warn("shard: WAL garbage sweep failed", "store", c.w.a.Name, "shard", c.w.shard, "err", err)
			}
		}
	}
}

// SweepGarbage lists the shard's WAL directory and deletes what planWALGarbage names. It holds
// sealMu while it reads the manifest and lists (see the ordering rule above), not while it
// deletes.
func (w *Writer) SweepGarbage(ctx context.Context) error {
	keys, err := w.PlanGarbage(ctx)
	if err != nil {
		return err
	}
	w.deleteObjects(ctx, keys)
	return nil
}

// PlanGarbage reads the manifest and the listing under sealMu and plans as the owner.
func (w *Writer) PlanGarbage(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, w.a.IOTimeout)
	defer cancel()
	w.sealMu.Lock()
	defer w.sealMu.Unlock()
	listing, err := objstore.ListAll(ctx, w.a.Objects, WALDir+w.shard+"/")
	if err != nil {
		return nil, err
	}
	heads, err := objstore.ListAllKeys(ctx, w.a.Objects, headPrefix(w.shard))
	if err != nil {
		return nil, err
	}
	m, _, err := latestShardManifest(ctx, w.a.Objects, w.shard)
	if err != nil || m == nil {
		return nil, err
	}
	w.mu.Lock()
	owner := &gcOwner{epoch: w.epoch, segments: maps.Clone(w.liveSegments)}
	fenced := w.fenced != nil
	w.mu.Unlock()
	if fenced || m.Epoch != w.epoch {
		owner = nil // no longer ours: plan only what is garbage for anyone
	}
	return append(planWALGarbage(w.shard, m, listing, owner), headsBelow(heads)...), nil
}

// deleteObjects deletes keys, each call bounded by the I/O timeout; failures are logged once
// per batch and counted.
func (w *Writer) deleteObjects(ctx context.Context, keys []string) {
	w.a.deleteObjects(ctx, w.shard, keys)
}

// deleteObjects hands a shard's WAL objects (keys chosen by the planner or by the manifest
// edit that just made them garbage) to the process's deleter, kind by kind; failures are logged
// once per batch (the deleter counts them) and left for the next sweep.
func (a *Access) deleteObjects(ctx context.Context, shard string, keys []string) {
	d := a.Deleter
	if d == nil {
		d = deleter.Shared()
	}
	byKind := map[deleter.Kind][]string{}
	for _, key := range keys {
		kind := walKind(shard, key)
		byKind[kind] = append(byKind[kind], key)
	}
	var failed int
	var firstErr error
	for _, kind := range deleter.Kinds {
		if len(byKind[kind]) == 0 {
			continue
		}
		res := d.Delete(ctx, a.Objects, kind, byKind[kind]...)
		if failed += res.Failed; firstErr == nil && res.Failed > 0 {
			firstErr = res.Err
		}
	}
	if failed > 0 {
		slog.Warn("shard: WAL garbage left for the next sweep", "store", a.Name, "shard", shard, "failed", failed, "err", firstErr)
	}
}

// walKind is what a WAL object of shard is, by where it lives.
func walKind(shard, key string) deleter.Kind {
	switch {
	case strings.HasPrefix(key, EntryPrefix(shard)):
		return deleter.WALEntry
	case strings.HasPrefix(key, SegmentPrefix(shard)):
		return deleter.WALSegment
	case strings.HasPrefix(key, GenerationsPrefix(shard)):
		return deleter.Generation
	case strings.HasPrefix(key, manifestPrefix(shard)), strings.HasPrefix(key, headPrefix(shard)):
		return deleter.ShardManifest
	}
	return deleter.Other
}
