// Package stores is the process's registry of open stores: a bounded LRU of open lsm.Stores
// resolved through the PostgreSQL catalog, shared by the HTTP API and the maintenance
// activities, and the process-wide flush sweeper.
//
// Lifecycle rule: a store handed out by Acquire stays open until its release function is called,
// even if it is evicted meanwhile; an evicted store is sealed and closed when its last user
// releases it. Concurrent first opens of one store open it once (singleflight).
package storecache

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/deleter"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
)

// Config configures a Manager.
type Config struct {
	DataURL string // where stores live by default: an object store URL (objstore.Open) or a local directory
	// Locations are the operator's further storage locations, chosen by name at store creation
	// (storage_options.location); none may lie inside another or inside DataURL.
	Locations []Location
	Capacity  int         // open stores kept resident (default 2000)
	Store     lsm.Options // process-wide clock, budget, metrics, instance id
	// WrapObjects, when set, wraps the data directory's object store (fault injection and I/O
	// accounting in tests; the e2e build's slow fragment writes).
	WrapObjects func(objstore.Store) objstore.Store
	// RequestMerge, when set, is asked for a merge of a store as soon as a seal here leaves its
	// shard with MergeAfterGenerations (default 8) generations pending (mergetrigger.go).
	RequestMerge          MergeRequester
	MergeAfterGenerations int
	// FlushTimeout bounds one store's flush in a flush pass (default max(5 x the interval, 30 s)).
	FlushTimeout time.Duration
}

// rewrittenKey names the objects Strata rewrites in place (never kept by the read cache): tables'
// latest-version hints and storage health probes.
func rewrittenKey(key string) bool {
	return table.IsRewrittenKey(key) || strings.HasPrefix(key, healthProbeDir)
}

// Manager hands out open stores.
type Manager struct {
	cat     *catalog.Catalog
	root    objstore.Store     // the data directory (as wrapped by Config.WrapObjects)
	dirs    objstore.DirLister // the same store, unwrapped, for listing datasets (nil: it cannot)
	rootURL string             // where stores live: the data URL without connection options
	dataURL string             // the data URL as configured (connection options included)
	// locations are where stores may live: the data URL ("default", first; its objects are
	// root) and the operator's named locations, each opened once by New.
	locations []*location
	cfg       Config
	log       *slog.Logger

	mu      sync.Mutex // guards cache (and the handles' refs/evicted flags)
	cache   *lru.Cache[string, *handle]
	group   singleflight.Group
	closing sync.WaitGroup // background closes of evicted stores; Close waits for them
	// flushes counts flush-pass goroutines, including ones a pass stopped waiting for because
	// their store's storage hung; Close waits for them (bounded by its context).
	flushes sync.WaitGroup

	hits, misses prometheus.Counter
	resident     prometheus.GaugeFunc

	probing  chan struct{} // one token: at most one storage probe in flight (health.go)
	probeMu  sync.Mutex    // guards probeAt and probeErr: the last probe's time and result
	probeAt  time.Time
	probeErr error
	fenced   sync.Map      // cacheKey -> struct{}: stores whose write shard was claimed (health.go)
	merges   *mergeTrigger // nil without Config.RequestMerge; stopped by Close after the last seal
	seals    *sealWatch    // change-feed waiters and this process's seals to announce (sealwatch.go)
}

type handle struct {
	kind    catalog.Kind
	name    string
	entry   catalog.Store // the registry row it was opened from (rows never change once created)
	store   *lsm.Store
	refs    int  // guarded by Manager.mu
	evicted bool // guarded by Manager.mu
	// flushing is set while a flush pass seals the store, by the goroutine that does: a pass
	// skips a store whose previous flush has not returned (a call hung in its storage).
	flushing atomic.Bool
}

// New creates a manager over the data directory.
func New(cat *catalog.Catalog, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Manager, error) {
	if cfg.Capacity <= 0 {
		cfg.Capacity = 2000
	}
	u, err := objstore.ParseURL(cfg.DataURL)
	if err != nil {
		return nil, err
	}
	m := &Manager{cat: cat, dataURL: u.String(), cfg: cfg, log: log, probing: make(chan struct{}, 1), seals: newSealWatch()}
	def, dirs, err := m.openLocation(DefaultLocation, u.String())
	if err != nil {
		return nil, err
	}
	m.root, m.dirs, m.rootURL = def.objects, dirs, def.rootURL
	m.locations = []*location{def}
	for _, l := range cfg.Locations {
		if err := validateLocationName(l.Name); err != nil || l.Name == DefaultLocation {
			return nil, fmt.Errorf("storage location name %q: 1-32 characters of [a-z0-9_-], not %q", l.Name, DefaultLocation)
		}
		if slices.ContainsFunc(m.locations, func(o *location) bool { return o.name == l.Name }) {
			return nil, fmt.Errorf("storage location %q is named twice", l.Name)
		}
		loc, _, err := m.openLocation(l.Name, l.URL)
		if err != nil {
			return nil, err
		}
		m.locations = append(m.locations, loc)
	}
	if err := checkLocationsApart(m.locations); err != nil {
		return nil, err
	}
	m.cache, _ = lru.NewWithEvict[string, *handle](cfg.Capacity, m.onEvict)
	if cfg.RequestMerge != nil {
		if cfg.MergeAfterGenerations <= 0 {
			cfg.MergeAfterGenerations = 8
		}
		m.merges = newMergeTrigger(cfg.RequestMerge, cfg.MergeAfterGenerations, log.Warn)
	}
	m.hits = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_store_cache_hits_total", Help: "Store opens served by the resident cache."})
	m.misses = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_store_cache_misses_total", Help: "Store opens that had to open the store."})
	m.resident = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_stores_resident", Help: "Stores open in this process."},
		func() float64 { return float64(m.cache.Len()) })
	hedges := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_objstore_hedged_reads_total",
		Help: "Second requests sent for small object-store reads slower than most recent ones (objstore.Hedged), all locations."},
		func() float64 {
			var n int64
			for _, l := range m.locations {
				if l.hedged != nil {
					n += l.hedged.Hedges()
				}
			}
			return float64(n)
		})
	if reg != nil {
		reg.MustRegister(m.hits, m.misses, m.resident, hedges)
	}
	return m, nil
}

func cacheKey(kind catalog.Kind, name string) string { return string(kind) + "/" + name }

// onEvict runs under m.mu (inside cache operations): an unused store closes now, a used one when
// its last user releases it.
func (m *Manager) onEvict(_ string, h *handle) {
	h.evicted = true
	if h.refs == 0 {
		m.closeLater(h)
	}
}

func (m *Manager) closeLater(h *handle) {
	m.closing.Add(1)
	go func() {
		defer m.closing.Done()
		m.close(h)
	}()
}

func (m *Manager) close(h *handle) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.store.Close(ctx); err != nil {
		m.log.Warn("closing evicted store failed", "kind", h.kind, "name", h.name, "err", err)
	}
}

// Acquire returns the open store kind/name (catalog.ErrNotFound when it is not registered) and
// the function that releases it.
func (m *Manager) Acquire(ctx context.Context, kind catalog.Kind, name string) (*lsm.Store, func(), error) {
	s, _, release, err := m.AcquireEntry(ctx, kind, name)
	return s, release, err
}

// AcquireEntry is Acquire that also returns the store's registry row, as read when the store was
// opened: a resident store answers without a catalog round trip, so PostgreSQL being slow or down
// never blocks its appends and reads.
func (m *Manager) AcquireEntry(ctx context.Context, kind catalog.Kind, name string) (*lsm.Store, catalog.Store, func(), error) {
	key := cacheKey(kind, name)
	for {
		m.mu.Lock()
		if h, ok := m.cache.Get(key); ok && !h.evicted {
			h.refs++
			m.mu.Unlock()
			m.hits.Inc()
			return h.store, h.entry, m.releaser(h), nil
		}
		m.mu.Unlock()
		m.misses.Inc()
		_, err, _ := m.group.Do(key, func() (any, error) {
			m.mu.Lock()
			if h, ok := m.cache.Peek(key); ok && !h.evicted {
				m.mu.Unlock()
				return nil, nil
			}
			m.mu.Unlock()
			st, err := m.cat.GetStore(ctx, kind, name)
			if err != nil {
				return nil, err
			}
			s, err := m.open(ctx, st)
			if err != nil {
				return nil, err
			}
			m.mu.Lock()
			m.cache.Add(key, &handle{kind: kind, name: name, entry: st, store: s})
			m.mu.Unlock()
			return nil, nil
		})
		if err != nil {
			return nil, catalog.Store{}, nil, err
		}
	}
}

func (m *Manager) releaser(h *handle) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			h.refs--
			closeNow := h.evicted && h.refs == 0
			m.mu.Unlock()
			if closeNow {
				m.closeLater(h)
			}
		})
	}
}

// RetainFor is how long merged generations are kept for change-feed consumers and read tokens
// (lsm.Options.RetainFor); a consumer that has not committed for longer holds nothing.
func (m *Manager) RetainFor() time.Duration {
	return cmp.Or(m.cfg.Store.RetainFor, lsm.DefaultRetainFor)
}

// open opens a registered store, creating its table if the process that registered it died
// before doing so.
func (m *Manager) open(ctx context.Context, st catalog.Store) (*lsm.Store, error) {
	objects, err := m.objectsOf(ctx, st)
	if err != nil {
		return nil, err
	}
	opts := m.cfg.Store
	opts.Name = string(st.Kind) + "/" + st.Name
	if m.cat != nil {
		kind, name, retainFor := st.Kind, st.Name, m.RetainFor()
		opts.Holds = func(ctx context.Context) (lsm.Holds, error) {
			h, _, err := StoreHolds(ctx, m.cat, kind, name, retainFor)
			return h, err
		}
	}
	kind, name := st.Kind, st.Name
	opts.OnSeal = func(pending int) {
		m.seals.sealed(cacheKey(kind, name))
		if m.merges != nil {
			m.merges.sealed(kind, name, pending)
		}
	}
	s, err := lsm.Open(ctx, objects, opts)
	if errors.Is(err, table.ErrNotFound) {
		k, kerr := kinds.Of(st.Kind)
		if kerr != nil {
			return nil, kerr
		}
		schema, serr := k.Schema(st.Schema)
		if serr != nil {
			return nil, serr
		}
		return lsm.Create(ctx, objects, schema, k.KeyColumn, opts)
	}
	return s, err
}

// Create registers a store (idempotently) and creates its table. schemaSpec is nil for kinds
// with a fixed schema.
func (m *Manager) Create(ctx context.Context, kind catalog.Kind, name string, schemaSpec, options []byte) (catalog.Store, bool, error) {
	if err := catalog.ValidateName(name); err != nil {
		return catalog.Store{}, false, err
	}
	k, err := kinds.Of(kind)
	if err != nil {
		return catalog.Store{}, false, err
	}
	opts, err := decodeStoreOptions(kind, options)
	if err != nil {
		return catalog.Store{}, false, err
	}
	loc, err := m.validateStorageOptions(opts.Storage)
	if err != nil {
		return catalog.Store{}, false, err
	}
	if kind == catalog.KindGeneric {
		if err := kinds.CheckNewSchemaSpec(schemaSpec); err != nil {
			return catalog.Store{}, false, err
		}
	}
	schema, err := k.Schema(schemaSpec)
	if err != nil {
		return catalog.Store{}, false, err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	uri := fmt.Sprintf("%s/%s/%s.%s", storeBase(loc, opts.Storage), kind, name, hex.EncodeToString(rnd[:]))
	st, created, err := m.cat.CreateStore(ctx, catalog.StoreDefinition{Kind: kind, Name: name, URI: uri, Schema: schemaSpec, Options: options})
	if err != nil {
		return st, false, err
	}
	if created {
		objects, err := m.objectsOf(ctx, st)
		if err != nil {
			return st, false, err
		}
		if _, err := table.Create(ctx, objects, schema, k.KeyColumn, m.cfg.Store.Table); err != nil {
			return st, false, err
		}
	}
	return st, created, nil
}

// Delete soft-deletes the store in the catalog and closes it here. Its data stays until
// registry cleanup purges it.
func (m *Manager) Delete(ctx context.Context, kind catalog.Kind, name string) error {
	if _, err := m.cat.SoftDeleteStore(ctx, kind, name); err != nil {
		return err
	}
	m.mu.Lock()
	m.cache.Remove(cacheKey(kind, name)) // onEvict closes it once unused
	m.mu.Unlock()
	return nil
}

// Catalog is the catalog the manager resolves stores through.
func (m *Manager) Catalog() *catalog.Catalog { return m.cat }

// residentStores returns the resident stores, each acquired; the caller releases each one
// (m.releaser(h)()) when done with it.
func (m *Manager) residentStores() []*handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	var hs []*handle
	for _, key := range m.cache.Keys() {
		if h, ok := m.cache.Peek(key); ok && !h.evicted {
			h.refs++
			hs = append(hs, h)
		}
	}
	return hs
}

// Close seals and closes every resident store (shutdown).
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	var hs []*handle
	for _, key := range m.cache.Keys() {
		if h, ok := m.cache.Peek(key); ok {
			h.refs++ // closed below, not by the eviction callback
			hs = append(hs, h)
		}
	}
	m.cache.Purge()
	m.mu.Unlock()
	flushed := make(chan struct{})
	go func() { m.flushes.Wait(); close(flushed) }()
	select {
	case <-flushed:
	case <-ctx.Done():
		return fmt.Errorf("closing stores: a flush is stuck in its storage: %w", ctx.Err())
	}
	m.closing.Wait()
	var errs []error
	for _, h := range hs {
		if err := h.store.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", h.kind, h.name, err))
		}
	}
	if m.merges != nil {
		m.merges.stop()
	}
	return errors.Join(errs...)
}

// Purge deletes the data of a soft-deleted store, then its registry row. It deletes as it goes
// and can be re-run after an interruption; a live store is never purged, and nothing of another
// registered store (one whose directory lies inside this one's) is ever deleted.
func (m *Manager) Purge(ctx context.Context, st catalog.Store) (int, error) {
	if st.DeletedAt == nil {
		return 0, fmt.Errorf("%w: store %s/%s is live", catalog.ErrConflict, st.Kind, st.Name)
	}
	objects, err := m.objectsOf(ctx, st)
	if err != nil {
		return 0, err
	}
	nested, err := m.cat.StoresWithin(ctx, st.URI, maxNestedStores+1)
	if err != nil {
		return 0, err
	}
	if len(nested) > maxNestedStores {
		return 0, fmt.Errorf("%w: store %s/%s holds more than %d other stores' directories; purge them first", catalog.ErrConflict, st.Kind, st.Name, maxNestedStores)
	}
	var keep []string // key prefixes (within st) of the stores registered inside it
	for _, n := range nested {
		keep = append(keep, strings.TrimPrefix(n.URI, st.URI+"/")+"/")
	}
	objs, err := objstore.ListAll(ctx, objects, "")
	if err != nil {
		return 0, err
	}
	var doomed []string
	for _, o := range objs {
		if !slices.ContainsFunc(keep, func(p string) bool { return strings.HasPrefix(o.Key, p) }) {
			doomed = append(doomed, o.Key)
		}
	}
	// Through the process's deleter: paced, so a purge of a large store does not flood the
	// object store every other store reads from.
	del := m.cfg.Store.Table.Deleter
	if del == nil {
		del = deleter.Shared()
	}
	res := del.Delete(ctx, objects, deleter.PurgedStore, doomed...)
	if res.Failed > 0 || res.Skipped > 0 {
		return res.Deleted, fmt.Errorf("purge %s/%s: %d objects left: %w", st.Kind, st.Name, res.Failed+res.Skipped, res.Err)
	}
	return res.Deleted, m.cat.PurgeStore(ctx, st.ID)
}

// maxNestedStores bounds the registered stores a purge steps around inside a store's directory
// (only stores registered before prefixes were checked can be nested at all).
const maxNestedStores = 1000

// DataURL is the data URL the manager was configured with, canonical (a local directory as
// file:///abs), connection options included.
func (m *Manager) DataURL() string { return m.dataURL }

// Orphan is a dataset on storage that no registry row (live or deleted) points at.
type Orphan struct {
	Kind catalog.Kind
	Dir  string // the dataset's directory under <data dir>/<kind>/
	URI  string
}

// Orphans lists the datasets of kind with no registry row.
func (m *Manager) Orphans(ctx context.Context, kind catalog.Kind) ([]Orphan, error) {
	if m.dirs == nil {
		return nil, nil // a store that cannot list directories: no orphan search
	}
	dirs, err := m.dirs.ListDirs(ctx, string(kind))
	if err != nil {
		return nil, err
	}
	var out []Orphan
	for start := 0; start < len(dirs); start += 1000 {
		batch := dirs[start:min(start+1000, len(dirs))]
		uris := make([]string, len(batch))
		for i, d := range batch {
			uris[i] = fmt.Sprintf("%s/%s/%s", m.rootURL, kind, d)
		}
		known, err := m.cat.RegisteredURIs(ctx, uris)
		if err != nil {
			return nil, err
		}
		for i, d := range batch {
			if known[uris[i]] {
				continue
			}
			// A purged store can leave empty directories behind: those are not datasets.
			page, err := m.root.List(ctx, fmt.Sprintf("%s/%s/", kind, d), "", 1)
			if err != nil {
				return nil, err
			}
			if len(page.Objects) > 0 {
				out = append(out, Orphan{Kind: kind, Dir: d, URI: uris[i]})
			}
		}
	}
	return out, nil
}

// Adopt registers an orphaned rollout dataset under the name its directory carries
// (<name>.<suffix>). Other kinds are not adopted: their declared schema is not on storage.
func (m *Manager) Adopt(ctx context.Context, o Orphan) (bool, error) {
	if o.Kind != catalog.KindRollout {
		return false, nil
	}
	i := strings.LastIndexByte(o.Dir, '.')
	if i <= 0 {
		return false, nil
	}
	// A directory that holds a registered store, or lies inside one, is that store's: adopting it
	// would let a later purge of the adopted store delete the other's data.
	if inside, err := m.cat.StoresWithin(ctx, o.URI, 1); err != nil || len(inside) > 0 {
		return false, err
	}
	if _, holds, err := m.cat.StoreContaining(ctx, o.URI); err != nil || holds {
		return false, err
	}
	_, created, err := m.cat.CreateStore(ctx, catalog.StoreDefinition{Kind: o.Kind, Name: o.Dir[:i], URI: o.URI})
	if errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrInvalid) {
		return false, nil // the name is taken by another store, or not a store name
	}
	return created, err
}
