// What the shard code needs from the process and the store, passed in explicitly: Access for any
// process that reads or edits a store's shards (readers, merges), Config for the one writer of a
// shard in this process.
package shard

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/deleter"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/objstore"
)

// Access is one store's shards as one process sees them: the store's objects, its table schema
// and the process-wide caches and metrics. Safe for concurrent use; never modified once built.
type Access struct {
	Name      string // the store's name in logs (kind/name), "" when unknown
	Objects   objstore.Store
	Schema    *arrow.Schema // the table schema, internal columns included
	KeyColumn string
	Allocator memory.Allocator
	Metrics   *Metrics
	IOTimeout time.Duration // bound on each background object-store call
	// Deleter carries out every WAL deletion (the process's; deleter.Shared() when nil).
	Deleter   *deleter.Deleter
	cache     cache.Namespace
	manifests *shardManifestCache
}

// NewAccess builds an Access; c is the process's object cache (generation key files and shard
// manifests are cached in a namespace of their own).
func NewAccess(objects objstore.Store, schema *arrow.Schema, keyColumn string, mem memory.Allocator, c *cache.Cache, metrics *Metrics, ioTimeout time.Duration) *Access {
	a := &Access{Objects: objects, Schema: schema, KeyColumn: keyColumn, Allocator: mem, Metrics: metrics, IOTimeout: ioTimeout,
		cache: c.Namespace()}
	a.manifests = newShardManifestCache(a.cache)
	return a
}

// Config is what a shard writer needs beyond Access.
type Config struct {
	Shard       string
	Instance    string // the claiming process's instance id (recorded in the manifest)
	Clock       *hlc.Clock
	Writer      WriterOptions
	WriteBuffer *WriteBuffer // the process's bound on unsealed bytes (nil: unlimited)
	// OnSeal, when set, is told after each seal that made a generation how many generations the
	// shard now has pending merge. It runs on the sealing goroutine: it must not block.
	OnSeal func(pending int)
}
