// Package cache is the process-wide cache of decoded immutable objects (Parquet footers,
// deletion bitmaps, key-index footers, table and shard manifests, generation key files), bounded
// in bytes across every store of the process. Per-store caches bounded by entry count would make
// a worker's memory grow with the number of stores and with their age (manifests and footers get
// larger as tables grow); one byte budget keeps it fixed whatever the workload.
//
// Each store handle takes its own Namespace, so two stores' relative object keys never collide.
// Values are shared between readers and must never be modified. Eviction is least recently used,
// by each entry's estimated cost, over the whole cache (one list: a large object, such as the
// footer of a big fragment, may take any share of the bytes; the lock is held only for map and
// list operations).
//
// A key of the form OBJECT#PART names a part of an object (a page of a key-index run, a ranged
// read of a fragment, a row group's offset index): removing OBJECT also removes its parts, so
// the owner of an object that is replaced or deleted drops everything decoded from it with one
// call instead of naming each part.
package cache

import (
	"container/list"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Cache is a byte-bounded LRU shared by every store of the process. A nil *Cache caches nothing.
type Cache struct {
	mu     sync.Mutex // guards ll, items, parts, bytes and byKind
	ll     *list.List // front: most recently used
	items  map[string]*list.Element
	parts  map[string]map[string]struct{} // OBJECT -> its cached OBJECT#PART keys (full keys)
	bytes  int64
	byKind map[string]int64 // bytes by kind of object (they sum to bytes)
	limit  int64

	spaces atomic.Uint64 // Namespace prefixes handed out

	hits, misses, evictions *prometheus.CounterVec
	// kindCounters holds each kind's hit and miss counters (map[string]*kindCounters, filled
	// once per kind): a lookup increments them without the vectors' label hashing.
	kindCounters sync.Map
}

// kindCounters are one kind's lookup counters.
type kindCounters struct{ hits, misses prometheus.Counter }

// counters returns kind's lookup counters.
func (c *Cache) counters(kind string) *kindCounters {
	if k, ok := c.kindCounters.Load(kind); ok {
		return k.(*kindCounters)
	}
	k, _ := c.kindCounters.LoadOrStore(kind, &kindCounters{hits: c.hits.WithLabelValues(kind), misses: c.misses.WithLabelValues(kind)})
	return k.(*kindCounters)
}

// keyBufferBytes: a full key (namespace prefix and key) up to this long is built on the stack
// for a lookup, not allocated.
const keyBufferBytes = 192

type entry struct {
	key   string
	kind  string
	value any
	cost  int64
}

// New creates a cache of limit bytes (<= 0: nil, no caching) and registers its metrics with reg
// (when not nil).
func New(limit int64, reg prometheus.Registerer) *Cache {
	if limit <= 0 {
		return nil
	}
	c := &Cache{ll: list.New(), items: map[string]*list.Element{}, parts: map[string]map[string]struct{}{}, byKind: map[string]int64{}, limit: limit,
		hits:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_cache_hits_total", Help: "Lookups served by the object cache, by kind of object."}, []string{"kind"}),
		misses:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_cache_misses_total", Help: "Lookups the object cache could not serve, by kind of object."}, []string{"kind"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_cache_evictions_total", Help: "Objects evicted from the object cache to stay within its byte limit, by kind."}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(c.hits, c.misses, c.evictions, kindBytesCollector{c},
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_cache_limit_bytes", Help: "The object cache's byte limit."},
				func() float64 { return float64(c.Limit()) }))
	}
	return c
}

// Bytes is the estimated size of everything cached.
func (c *Cache) Bytes() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// BytesByKind is the estimated size of what is cached, by kind of object.
func (c *Cache) BytesByKind() map[string]int64 {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byKind)
}

// kindBytesDesc is strata_cache_bytes: by kind, so an operator sees what fills the cache (the
// kinds are the fixed set the storage packages cache: footer, index, index_page, manifest, ...).
var kindBytesDesc = prometheus.NewDesc("strata_cache_bytes", "Estimated bytes held by the object cache, by kind of object.", []string{"kind"}, nil)

// kindBytesCollector reports strata_cache_bytes at scrape time.
type kindBytesCollector struct{ c *Cache }

func (k kindBytesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- kindBytesDesc }

func (k kindBytesCollector) Collect(ch chan<- prometheus.Metric) {
	for kind, n := range k.c.BytesByKind() {
		ch <- prometheus.MustNewConstMetric(kindBytesDesc, prometheus.GaugeValue, float64(n), kind)
	}
}

// Limit is the byte limit (0 for a nil cache).
func (c *Cache) Limit() int64 {
	if c == nil {
		return 0
	}
	return c.limit
}

// Namespace returns a key space of its own, for one store handle.
func (c *Cache) Namespace() Namespace {
	if c == nil {
		return Namespace{}
	}
	return Namespace{c: c, prefix: strconv.FormatUint(c.spaces.Add(1), 36) + "/"}
}

// Namespace is one store handle's part of the cache. The zero Namespace caches nothing.
type Namespace struct {
	c      *Cache
	prefix string
}

// Limit is the byte limit of the whole cache the namespace is part of (0 for the zero Namespace).
func (n Namespace) Limit() int64 { return n.c.Limit() }

// Get returns the value cached under key, of kind (a metric label: "footer", "manifest", ...).
func Get[T any](n Namespace, kind, key string) (T, bool) {
	var zero T
	if n.c == nil {
		return zero, false
	}
	var buf [keyBufferBytes]byte
	full := append(append(buf[:0], n.prefix...), key...)
	s := n.c
	s.mu.Lock()
	el, ok := s.items[string(full)] // no allocation: the conversion only looks the key up
	var value any
	if ok {
		s.ll.MoveToFront(el)
		value = el.Value.(*entry).value // under the lock: Add may replace it
	}
	s.mu.Unlock()
	counters := s.counters(kind)
	if !ok {
		counters.misses.Inc()
		return zero, false
	}
	v, ok := value.(T)
	if ok {
		counters.hits.Inc()
	}
	return v, ok
}

// Add caches value under key with its estimated cost in bytes, evicting the least recently used
// entries past the limit. A value costing more than half the cache is not cached.
func Add(n Namespace, kind, key string, value any, cost int64) {
	if n.c == nil {
		return
	}
	cost = max(cost, 64) + int64(len(key)) + 64 // the entry, its key and its list element
	key = n.prefix + key
	s := n.c
	if cost > s.limit/2 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.items[key]; ok {
		old := el.Value.(*entry)
		s.account(old.kind, -old.cost)
		s.account(kind, cost)
		old.value, old.cost, old.kind = value, cost, kind
		s.ll.MoveToFront(el)
	} else {
		s.items[key] = s.ll.PushFront(&entry{key: key, kind: kind, value: value, cost: cost})
		s.account(kind, cost)
		if owner, ok := ownerOf(key); ok {
			if s.parts[owner] == nil {
				s.parts[owner] = map[string]struct{}{}
			}
			s.parts[owner][key] = struct{}{}
		}
	}
	for s.bytes > s.limit {
		e := s.ll.Back().Value.(*entry)
		s.drop(e.key)
		n.c.evictions.WithLabelValues(e.kind).Inc()
	}
}

// Remove drops key and its parts (key#...); a no-op for what is not cached.
func Remove(n Namespace, key string) {
	if n.c == nil {
		return
	}
	key = n.prefix + key
	s := n.c
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(key)
	for part := range s.parts[key] {
		s.drop(part)
	}
	delete(s.parts, key)
}

// ownerOf is the object a full key names a part of: the text before its first '#' (namespace
// prefixes hold none).
func ownerOf(key string) (string, bool) {
	i := strings.IndexByte(key, '#')
	if i < 0 {
		return "", false
	}
	return key[:i], true
}

// drop removes one full key (the caller holds mu).
func (c *Cache) drop(key string) {
	el, ok := c.items[key]
	if !ok {
		return
	}
	c.ll.Remove(el)
	delete(c.items, key)
	e := el.Value.(*entry)
	c.account(e.kind, -e.cost)
	if owner, ok := ownerOf(key); ok {
		if set := c.parts[owner]; set != nil {
			delete(set, key)
			if len(set) == 0 {
				delete(c.parts, owner)
			}
		}
	}
}

// account adds delta bytes of kind (the caller holds mu).
func (c *Cache) account(kind string, delta int64) {
	c.bytes += delta
	if c.byKind[kind] += delta; c.byKind[kind] == 0 {
		delete(c.byKind, kind)
	}
}
